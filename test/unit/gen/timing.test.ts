/**
 * Timing packets: TSC, TMA, MTC (MTCFreq), CYC (CycThresh), CBR, against the clock
 * relations of SDM §36.8.3 computed here with BigInt.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { afterPsb, BRANCHES, gen, insn, jsonl } from "./helpers.js";

const TSC0 = 0x10_0000_0000n;
const EAX = 2n;
const EBX = 308n;
const ctcAt = (tsc: bigint) => (tsc * EAX) / EBX;
const fcAt = (tsc: bigint) => ((tsc * EAX) % EBX) / EAX;
const hex = (v: bigint) => `0x${v.toString(16)}`;

describe("TSC and TMA", () => {
  test("TSC holds the counter, TMA its crystal clock bits and the ticks since the crystal tick", () => {
    const p = gen(jsonl(insn(0x1000, 1)), { ctl: { ...BRANCHES, TSCEn: 1, MTCEn: 1 } });
    assert.ok(p.includes(`tsc ${hex(TSC0)}`));
    assert.ok(p.includes(`tma ${ctcAt(TSC0) & 0xffffn} ${fcAt(TSC0)}`));
  });

  test("a frequency change sends TSC, TMA and CBR; core cycles become TSC ticks at nominal/CBR", () => {
    // 37 nominal, CBR 20 after the change: 1000 core cycles are 1850 TSC ticks.
    const x = jsonl(
      insn(0x1000, 1),
      { k: "cbr", ratio: 20 },
      { k: "cycles", n: 1000 },
      { k: "cbr", ratio: 30 },
      insn(0x1001, 1),
    );
    const p = afterPsb(gen(x, { ctl: { ...BRANCHES, TSCEn: 1, MTCEn: 1 } })).filter(
      (l) => !l.startsWith("mtc"),
    );
    const t = TSC0 + 1850n;
    assert.deepEqual(p, [
      `tsc ${hex(TSC0)}`,
      `tma ${ctcAt(TSC0) & 0xffffn} ${fcAt(TSC0)}`,
      "cbr 20",
      `tsc ${hex(t)}`,
      `tma ${ctcAt(t) & 0xffffn} ${fcAt(t)}`,
      "cbr 30",
      "fup 0x1002",
      "tip.pgd -",
    ]);
  });
});

describe("MTC", () => {
  for (const freq of [0, 3, 6]) {
    test(`MTCFreq ${freq}: one MTC each time crystal clock bit ${freq} toggles, with CTC[${freq + 7}:${freq}]`, () => {
      const ticks = 20_000n;
      const x = jsonl(insn(0x1000, 1), { k: "ticks", n: Number(ticks) }, insn(0x1001, 1));
      const p = afterPsb(gen(x, { ctl: { ...BRANCHES, MTCEn: 1, MTCFreq: freq } }));
      const shift = BigInt(freq);
      const want: string[] = [];
      for (let k = (ctcAt(TSC0) >> shift) + 1n; k <= ctcAt(TSC0 + ticks) >> shift; k++)
        want.push(`mtc ${k & 0xffn}`);
      assert.ok(want.length > 0);
      assert.deepEqual(
        p.filter((l) => l.startsWith("mtc")),
        want,
      );
    });
  }

  test("no MTC while the core sleeps; MTCEn=0 none at all", () => {
    const x = jsonl(
      insn(0x1000, 1),
      { k: "sleep", cstate: 1, substate: 0 },
      { k: "ticks", n: 20_000 },
      { k: "wake", last: 1, deepest: 1 },
      insn(0x1001, 1),
    );
    assert.deepEqual(
      gen(x, { ctl: { ...BRANCHES, MTCEn: 1 } }).filter((l) => l.startsWith("mtc")),
      [],
    );
    const y = jsonl(insn(0x1000, 1), { k: "ticks", n: 20_000 }, insn(0x1001, 1));
    assert.deepEqual(
      gen(y, { ctl: BRANCHES }).filter((l) => l.startsWith("mtc")),
      [],
    );
  });
});

describe("CYC", () => {
  const x = jsonl(
    insn(0x1000, 2, "jump-indirect"),
    { k: "cycles", n: 3 },
    insn(0x2000, 2, "jump-indirect"),
    { k: "cycles", n: 40 },
    insn(0x3000, 2, "jump-indirect"),
    insn(0x4000, 2, "jump-indirect"),
    insn(0x5000, 1),
  );

  test("CycThresh 0: a CYC with the cycles since the last one before each eligible packet, none in the same cycle", () => {
    assert.deepEqual(afterPsb(gen(x, { ctl: { ...BRANCHES, CYCEn: 1 } })), [
      "tip 0x2000",
      "cyc 3",
      "tip 0x3000",
      "cyc 40",
      "tip 0x4000",
      "tip 0x5000",
      "fup 0x5001",
      "tip.pgd -",
    ]);
  });

  test("CycThresh 3: a CYC only once 4 cycles have passed", () => {
    assert.deepEqual(afterPsb(gen(x, { ctl: { ...BRANCHES, CYCEn: 1, CycThresh: 3 } })), [
      "tip 0x2000",
      "tip 0x3000",
      "cyc 43",
      "tip 0x4000",
      "tip 0x5000",
      "fup 0x5001",
      "tip.pgd -",
    ]);
  });

  test("time passed in one step: each MTC gets a CYC with the cycles up to its crystal tick", () => {
    // 20,000 TSC ticks at CBR = nominal (20,000 cycles) in one event, MTCFreq 3: an MTC
    // every 8 crystal ticks, 1,232 TSC ticks (DynamoRIO hello: a CYC before every MTC).
    const y = jsonl(insn(0x1000, 1), { k: "ticks", n: 20_000 }, insn(0x1001, 1));
    const p = afterPsb(gen(y, { ctl: { ...BRANCHES, CYCEn: 1, MTCEn: 1, MTCFreq: 3 } }));
    const mtcs = p.flatMap((l, k) => (l.startsWith("mtc") ? [k] : []));
    assert.ok(mtcs.length >= 15);
    for (const k of mtcs) assert.match(p[k - 1]!, /^cyc /);
    const cycs = p.filter((l) => l.startsWith("cyc")).map((l) => Number(l.slice(4)));
    // Between two MTCs, one MTC period (to a cycle: whole cycles); in all, every cycle once.
    for (const c of cycs.slice(1, mtcs.length)) assert.ok(Math.abs(c - 1232) <= 1, `cyc ${c}`);
    assert.equal(
      cycs.reduce((a, b) => a + b, 0),
      20_000,
    );
  });

  test("a TNT's CYC times its oldest branch", () => {
    const y = jsonl(
      insn(0x1000, 2, "jump-indirect"),
      { k: "cycles", n: 5 },
      insn(0x2000, 2, "cond-branch"),
      { k: "cycles", n: 7 },
      insn(0x2002, 2, "cond-branch"),
      { k: "cycles", n: 9 },
      insn(0x2004, 2, "jump-indirect"),
      insn(0x3000, 1),
    );
    assert.deepEqual(afterPsb(gen(y, { ctl: { ...BRANCHES, CYCEn: 1 } })), [
      "tip 0x2000",
      "cyc 5",
      "tnt NN",
      "cyc 16",
      "tip 0x3000",
      "fup 0x3001",
      "tip.pgd -",
    ]);
  });
});

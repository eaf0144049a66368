/**
 * PTWRITE (Table 36-40), power events (Tables 36-41..44) and TSX (§36.2.8.1, Table
 * 36-27): exact packets from hand-written executions.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { afterPsb, BRANCHES, gen, insn, jsonl } from "./helpers.js";

describe("PTWRITE", () => {
  const x = jsonl(
    insn(0x1000, 5, "ptwrite"),
    { k: "ptw", value: "0x1122334455667788", bytes: 8 },
    insn(0x1005, 1),
  );
  const caps = { ptwrite: true };

  test("PTW with its payload; with FUPonPTW the IP bit and a FUP with the PTWRITE's IP", () => {
    assert.deepEqual(afterPsb(gen(x, { ctl: { ...BRANCHES, PTWEn: 1 }, caps })), [
      "ptw 0x1122334455667788/8",
      "fup 0x1006",
      "tip.pgd -",
    ]);
    assert.deepEqual(afterPsb(gen(x, { ctl: { ...BRANCHES, PTWEn: 1, FUPonPTW: 1 }, caps })), [
      "ptw 0x1122334455667788/8 ip",
      "fup 0x1000",
      "fup 0x1006",
      "tip.pgd -",
    ]);
  });

  test("nothing without PTWEn, outside the filter range or out of context", () => {
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES, caps })), ["fup 0x1006", "tip.pgd -"]);
    const filtered = {
      ctl: { ...BRANCHES, PTWEn: 1, ADDR0_CFG: 1 },
      ranges: [[0x9000n, 0x9fffn]] as [bigint, bigint][],
      caps,
    };
    assert.deepEqual(afterPsb(gen(x, filtered)), []);
    const kernel = jsonl(
      { k: "cpl", cpl: 0 },
      insn(0x1000, 5, "ptwrite"),
      { k: "ptw", value: "0x1", bytes: 4 },
      insn(0x1005, 1),
    );
    assert.deepEqual(afterPsb(gen(kernel, { ctl: { ...BRANCHES, OS: 0, PTWEn: 1 }, caps })), []);
  });
});

describe("power events", () => {
  const caps = { powerEventTrace: true };
  const mwait = jsonl(
    insn(0x1000, 1),
    insn(0x1001, 3, "mwait"),
    { k: "mwait", hints: 0x20, ext: 1 },
    { k: "sleep", cstate: 2, substate: 0 },
    { k: "sleep", cstate: 6, substate: 2 },
    { k: "ticks", n: 1000 },
    { k: "wake", last: 6, deepest: 6, reasons: ["interrupt"] },
    insn(0x1004, 1),
  );

  test("MWAIT, PWRE, EXSTOP with FUP(the MWAIT), deeper PWRE, then PWRX and the timing packets of a wake", () => {
    assert.deepEqual(afterPsb(gen(mwait, { ctl: { ...BRANCHES, PwrEvtEn: 1, TSCEn: 1 }, caps })), [
      "mwait 32 1",
      "pwre c2.0",
      "exstop ip",
      "fup 0x1001",
      "pwre c6.2",
      "pwrx c6 c6 int",
      "tsc 0x10000003e8",
      "cbr 37",
      "fup 0x1005",
      "tip.pgd -",
    ]);
  });

  test("without PwrEvtEn only the wake's timing packets; out of context EXSTOP has no IP and MWAIT is hidden", () => {
    assert.deepEqual(afterPsb(gen(mwait, { ctl: BRANCHES, caps })), ["cbr 37", "fup 0x1005", "tip.pgd -"]);
    const kernel = jsonl(
      { k: "cpl", cpl: 0 },
      ...mwait
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    );
    assert.deepEqual(afterPsb(gen(kernel, { ctl: { ...BRANCHES, OS: 0, PwrEvtEn: 1 }, caps })), [
      "pwre c2.0",
      "exstop",
      "pwre c6.2",
      "pwrx c6 c6 int",
      "cbr 37",
    ]);
  });

  test("a C-state entered by hardware: PWRE hw, EXSTOP with FUP(the next instruction); HLT: FUP(the HLT)", () => {
    const hw = jsonl(
      insn(0x1000, 1),
      { k: "sleep", cstate: 1, substate: 0, hw: true },
      { k: "wake", last: 1, deepest: 1, reasons: ["hw"] },
      insn(0x1001, 1),
    );
    assert.deepEqual(afterPsb(gen(hw, { ctl: { ...BRANCHES, PwrEvtEn: 1 }, caps })), [
      "pwre c1.0 hw",
      "exstop ip",
      "fup 0x1001",
      "pwrx c1 c1 hw",
      "cbr 37",
      "fup 0x1002",
      "tip.pgd -",
    ]);
    const hlt = jsonl(
      insn(0x1000, 1, "hlt"),
      { k: "sleep", cstate: 1, substate: 0 },
      { k: "wake", last: 1, deepest: 1, reasons: ["interrupt", "store"] },
      insn(0x1001, 1),
    );
    assert.deepEqual(afterPsb(gen(hlt, { ctl: { ...BRANCHES, PwrEvtEn: 1 }, caps })).slice(0, 4), [
      "pwre c1.0",
      "exstop ip",
      "fup 0x1000",
      "pwrx c1 c1 int,store",
    ]);
  });
});

describe("TSX", () => {
  test("XBEGIN: MODE.TSX begin + FUP; XEND: MODE.TSX commit + FUP; both with the instruction's IP", () => {
    const x = jsonl(insn(0x1000, 6, "xbegin"), insn(0x1006, 1), insn(0x1007, 3, "xend"), insn(0x100a, 1));
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "mode.tsx begin",
      "fup 0x1000",
      "mode.tsx commit",
      "fup 0x1007",
      "fup 0x100b",
      "tip.pgd -",
    ]);
  });

  test("an abort: MODE.TSX abort, FUP(where), TIP(fallback); XABORT the same with its own IP", () => {
    const x = jsonl(
      insn(0x1000, 6, "xbegin"),
      insn(0x1006, 1),
      { k: "tsx-abort", from: "0x1007", to: "0x2000" },
      insn(0x2000, 6, "xbegin"),
      insn(0x2006, 3, "xabort"),
      insn(0x3000, 1),
    );
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "mode.tsx begin",
      "fup 0x1000",
      "mode.tsx abort",
      "fup 0x1007",
      "tip 0x2000",
      "mode.tsx begin",
      "fup 0x2000",
      "mode.tsx abort",
      "fup 0x2006",
      "tip 0x3000",
      "fup 0x3001",
      "tip.pgd -",
    ]);
  });

  test("PSB+ carries MODE.TSX with InTX inside a transaction", () => {
    const recs: object[] = [insn(0x1000, 6, "xbegin")];
    for (let k = 0; k < 6 * 2100; k++) recs.push(insn(0x5000, 2, "cond-branch"));
    recs.push(insn(0x5002, 1));
    const p = afterPsb(gen(jsonl(...recs), { ctl: BRANCHES }));
    const psb = p.indexOf("psb");
    assert.ok(psb > 0);
    assert.ok(p.slice(psb, p.indexOf("psbend", psb)).includes("mode.tsx begin"));
  });
});

/**
 * Stand-alone CYC packets (SDM §36.4.2.14, seed 004; emitter.ts `standaloneCycs`):
 * with GenOptions.cycCounterBits, cycles that would wrap the internal cycle counter
 * go out in CYCs of their own, and the next CYC-eligible packet gets a CYC even
 * below CycThresh. Exact packets, the cycles they add up to, and the trace decoded
 * by ptkit (cyc-standalone-libipt.test.ts: by Debian's libipt).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Image } from "../../../src/image/index.js";
import { runInsns } from "../../flow/run.js";
import { afterPsb, BRANCHES, gen, genBytes, insn, jsonl } from "./helpers.js";

const MAX = 2 ** 15 - 1;
/** nop; `n` cycles pass; nop; the trace ends after it. */
const run = (n: number) =>
  jsonl(insn(0x1000, 1), { k: "cycles", n }, insn(0x1001, 1), { k: "end", ip: "0x1002" });
const cycles = (list: readonly string[]) =>
  list.filter((l) => l.startsWith("cyc ")).reduce((s, l) => s + Number(l.slice(4)), 0);

describe("stand-alone CYC", () => {
  const CYC = { ...BRANCHES, CYCEn: 1 };

  test("cycles past the counter's width: stand-alone CYCs of its largest value, the rest before the next packet", () => {
    const n = 3 * MAX + 1699;
    const list = afterPsb(gen(run(n), { ctl: CYC }, { cycCounterBits: 15 }));
    assert.deepEqual(list, [`cyc ${MAX}`, `cyc ${MAX}`, `cyc ${MAX}`, "cyc 1699", "fup 0x1002", "tip.pgd -"]);
    assert.equal(cycles(list), n);
  });

  test("below CycThresh the next eligible packet still gets its CYC after a stand-alone one", () => {
    // CycThresh 13 (Skylake's largest): 2^12 cycles; the 100 after the stand-alone CYC are fewer.
    const list = afterPsb(gen(run(MAX + 100), { ctl: { ...CYC, CycThresh: 13 } }, { cycCounterBits: 15 }));
    assert.deepEqual(list, [`cyc ${MAX}`, "cyc 100", "fup 0x1002", "tip.pgd -"]);
  });

  test("held TNT bits go out before a stand-alone CYC", () => {
    const x = jsonl(insn(0x1000, 2, "cond-branch"), { k: "cycles", n: MAX + 5 }, insn(0x1002, 1), {
      k: "end",
      ip: "0x1003",
    });
    const list = afterPsb(gen(x, { ctl: CYC }, { cycCounterBits: 15 }));
    assert.deepEqual(list, ["tnt N", `cyc ${MAX}`, "cyc 5", "fup 0x1003", "tip.pgd -"]);
  });

  test("without cycCounterBits, without CYCEn or below the width: as before", () => {
    assert.deepEqual(afterPsb(gen(run(3 * MAX + 1699), { ctl: CYC })), [
      `cyc ${3 * MAX + 1699}`,
      "fup 0x1002",
      "tip.pgd -",
    ]);
    assert.deepEqual(
      genBytes(run(3 * MAX), { ctl: BRANCHES }, { cycCounterBits: 15 }),
      genBytes(run(3 * MAX), { ctl: BRANCHES }),
    );
    assert.deepEqual(
      genBytes(run(MAX), { ctl: CYC }, { cycCounterBits: 15 }),
      genBytes(run(MAX), { ctl: CYC }),
    );
  });

  test("cycCounterBits outside 15..52 is refused", () => {
    assert.throws(() => gen(run(1), { ctl: CYC }, { cycCounterBits: 14 }), /cycCounterBits 14/);
    assert.throws(() => gen(run(1), { ctl: CYC }, { cycCounterBits: 53 }), /cycCounterBits 53/);
  });

  test("ptkit decodes the trace to the instructions", () => {
    const bytes = genBytes(run(5 * MAX), { ctl: CYC }, { cycCounterBits: 15 });
    const image = new Image();
    image.addRaw("code", Uint8Array.from([0x90, 0x90]), 0, 0x1000);
    const t = runInsns(bytes, { image });
    assert.deepEqual(t.ips, [0x1000n, 0x1001n]);
    assert.ok(!t.lines.some((l) => l.includes("error")), t.lines.join("\n"));
  });
});

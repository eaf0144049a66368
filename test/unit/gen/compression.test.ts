/**
 * TNT packing and RET compression (SDM §36.4.2.1, "Indirect Transfer Compression for
 * Returns" in seed document 000), with exact packet lists.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RET_STACK_DEPTH } from "../../../src/unit/gen/index.js";
import { afterPsb, BRANCHES, gen, insn, jsonl } from "./helpers.js";

/** `n` conditional branches at 0x1000, 0x1010, ...; taken[i] decides where each goes. */
function branches(taken: boolean[]): object[] {
  const recs: object[] = [];
  let ip = 0x1000;
  for (const t of taken) {
    recs.push(insn(ip, 2, "cond-branch"));
    ip = t ? ip + 0x10 : ip + 2;
  }
  recs.push(insn(ip, 1));
  return recs;
}

describe("TNT packing", () => {
  test("six bits fill a short TNT, the next ones wait for the next packet", () => {
    const bits = [true, false, true, true, false, false, true, false];
    const p = afterPsb(gen(jsonl(...branches(bits)), { ctl: BRANCHES }));
    assert.deepEqual(p.slice(0, 2), ["tnt TNTTNN", "tnt TN"]);
  });

  test("with long TNT, up to 47 bits share one packet", () => {
    const bits = Array.from({ length: 50 }, (_, i) => i % 3 === 0);
    const p = afterPsb(gen(jsonl(...branches(bits)), { ctl: BRANCHES }, { longTnt: true }));
    const s = bits.map((b) => (b ? "T" : "N")).join("");
    assert.deepEqual(p.slice(0, 2), [`tnt64 ${s.slice(0, 47)}`, `tnt ${s.slice(47)}`]);
  });

  test("a partial TNT goes out before any other packet: TIP, FUP, MTC", () => {
    const x = jsonl(
      insn(0x1000, 2, "cond-branch"),
      insn(0x1010, 2, "jump-indirect"),
      insn(0x2000, 2, "cond-branch"),
      { k: "cycles", n: 100 },
      insn(0x2002, 2, "cond-branch"),
      insn(0x2004, 1),
    );
    const p = afterPsb(gen(x, { ctl: { ...BRANCHES, MTCEn: 1, MTCFreq: 0 } }));
    assert.deepEqual(p, ["tnt T", "tip 0x2000", "tnt N", "mtc 97", "tnt N", "fup 0x2005", "tip.pgd -"]);
  });
});

describe("RET compression", () => {
  const callRet = jsonl(insn(0x1000, 5, "call"), insn(0x5000, 1, "return"), insn(0x1005, 1));

  test("a RET to its CALL's next IP is one taken TNT bit", () => {
    assert.deepEqual(afterPsb(gen(callRet, { ctl: BRANCHES })), ["tnt T", "fup 0x1006", "tip.pgd -"]);
  });

  test("DisRETC: every RET is a TIP", () => {
    assert.deepEqual(afterPsb(gen(callRet, { ctl: { ...BRANCHES, DisRETC: 1 } })), [
      "tip 0x1005",
      "fup 0x1006",
      "tip.pgd -",
    ]);
  });

  test("a RET elsewhere than the youngest CALL's next IP is a TIP, and leaves the stack", () => {
    const x = jsonl(
      insn(0x1000, 5, "call"),
      insn(0x5000, 5, "call"),
      insn(0x6000, 1, "return"),
      insn(0x7000, 1, "return"),
      insn(0x5005, 1, "return"),
      insn(0x1005, 1),
    );
    // 0x6000 returns to 0x7000 (not 0x5005): TIP. The stack still holds 0x5005 on top,
    // so 0x7000's RET to 0x5005 is compressed, and 0x5005's to 0x1005 too.
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "tip 0x7000",
      "tnt TT",
      "fup 0x1006",
      "tip.pgd -",
    ]);
  });

  test("zero-length CALLs are not pushed", () => {
    const x = jsonl(insn(0x1000, 5, "call", { zlc: true }), insn(0x1005, 1, "return"), insn(0x1005, 1));
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), ["tip 0x1005", "fup 0x1006", "tip.pgd -"]);
    const indirect = jsonl(insn(0x1000, 2, "call-indirect"), insn(0x5000, 1, "return"), insn(0x1002, 1));
    assert.deepEqual(afterPsb(gen(indirect, { ctl: BRANCHES })), [
      "tip 0x5000",
      "tnt T",
      "fup 0x1003",
      "tip.pgd -",
    ]);
  });

  test(`only the youngest ${RET_STACK_DEPTH} CALLs are kept`, () => {
    // CALLs at 0x1000, 0x1010, ... each to the next, the last to 0x9000; RETs unwind them.
    const depth = RET_STACK_DEPTH + 1;
    const recs: object[] = [];
    for (let d = 0; d < depth; d++) recs.push(insn(0x1000 + d * 0x10, 5, "call"));
    recs.push(insn(0x9000, 1, "return"));
    for (let d = depth - 1; d >= 1; d--) recs.push(insn(0x1005 + d * 0x10, 1, "return"));
    recs.push(insn(0x1005, 1));
    const p = afterPsb(gen(jsonl(...recs), { ctl: BRANCHES }));
    const tnt = p
      .filter((l) => l.startsWith("tnt"))
      .map((l) => l.slice(4))
      .join("");
    assert.equal(tnt, "T".repeat(RET_STACK_DEPTH));
    assert.deepEqual(p.slice(-3), ["tip 0x1005", "fup 0x1006", "tip.pgd -"]);
  });

  test("never across PacketEn = 0: a CALL before a disabled stretch has an uncompressed RET", () => {
    const x = jsonl(
      { k: "cpl", cpl: 3 },
      insn(0x1000, 5, "call"),
      insn(0x5000, 2, "syscall"),
      { k: "cpl", cpl: 0 },
      insn("0xffffffff81000000", 3, "sysret"),
      { k: "cpl", cpl: 3 },
      insn(0x5002, 1, "return"),
      insn(0x1005, 1),
    );
    assert.deepEqual(afterPsb(gen(x, { ctl: { ...BRANCHES, OS: 0 } })), [
      "tip.pgd -",
      "tip.pge 0x5002",
      "tip 0x1005",
      "fup 0x1006",
      "tip.pgd -",
    ]);
  });

  test("never across a PSB", () => {
    // A CALL, then enough TNT bytes to pass the 2 KiB PSB period, then the RET.
    const recs: object[] = [insn(0x1000, 5, "call")];
    for (let k = 0; k < 6 * 2100; k++) recs.push(insn(0x5000, 2, "cond-branch"));
    recs.push(insn(0x5002, 1, "return"), insn(0x1005, 1));
    const p = afterPsb(gen(jsonl(...recs), { ctl: BRANCHES }));
    assert.ok(p.includes("psb"));
    assert.deepEqual(p.slice(-3), ["tip 0x1005", "fup 0x1006", "tip.pgd -"]);
  });
});

/**
 * PSB+ at the PSBFreq period (§36.3.7) and internal buffer overflow with its recovery
 * (§36.3.8, Table 36-15).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PacketDecoder } from "../../../src/packet/decoder.js";
import { Packet, PacketType } from "../../../src/packet/types.js";
import { afterPsb, BRANCHES, gen, genBytes, insn, jsonl } from "./helpers.js";

/** A loop of `n` taken conditional branches at 0x5000 (one TNT byte per 6), then an indirect jump. */
function loop(n: number): string {
  const branch = JSON.stringify(insn(0x5000, 2, "cond-branch"));
  return `${branch}\n`.repeat(n) + jsonl(insn(0x5000, 2, "jump-indirect"), insn(0x6000, 1));
}

function psbOffsets(bytes: Uint8Array): number[] {
  const d = new PacketDecoder(bytes);
  const p = new Packet();
  const out: number[] = [];
  d.syncSet(0);
  for (;;) {
    const at = d.pos;
    if (d.next(p) < 0) return out;
    if (p.type === PacketType.Psb) out.push(at);
  }
}

describe("PSB+ period", () => {
  for (const freq of [0, 1, 2]) {
    test(`PSBFreq ${freq}: a PSB as soon as ${2048 << freq} bytes have passed since the last`, () => {
      const bytes = genBytes(loop(6 * 20_000), { ctl: { ...BRANCHES, PSBFreq: freq } });
      const at = psbOffsets(bytes);
      const period = 2048 << freq;
      assert.ok(at.length >= 3 && bytes.length - at.at(-1)! < period + 64, `PSBs at ${at.join(", ")}`);
      for (let k = 1; k < at.length; k++) {
        const gap = at[k]! - at[k - 1]!;
        assert.ok(gap >= period && gap <= period + 1, `gap ${gap}`);
      }
    });
  }

  test("each PSB+ has a FUP with the IP execution goes on at, and a full IP", () => {
    const p = gen(loop(6 * 3000), { ctl: BRANCHES });
    const fups = p.filter((l, k) => l.startsWith("fup") && p[k + 1] === "psbend");
    assert.ok(fups.length >= 2);
    for (const f of fups) assert.equal(f, "fup 0x5000");
  });
});

describe("internal buffer overflow", () => {
  const buffer = { internalBuffer: { bytes: 64, drainPerCycle: 1 }, cyclesPerInsn: 0 };
  /** Time to drain the opening, 40 indirect jumps in no time (3-byte TIPs overflow 64 bytes), time, more. */
  function burst(): string {
    const recs: object[] = [{ k: "cycles", n: 100 }, insn(0x1000, 5, "call")];
    for (let k = 0; k < 40; k++) recs.push(insn(0x5000 + k * 0x10, 2, "jump-indirect"));
    recs.push(insn(0x5400, 1), { k: "cycles", n: 100 }, insn(0x5401, 1, "return"), insn(0x1005, 1));
    return jsonl(...recs);
  }

  test("packets are dropped until the buffer drains; then OVF and FUP(IP), no RET compression across it", () => {
    const p = afterPsb(gen(burst(), { ctl: BRANCHES }, buffer));
    const ovf = p.indexOf("ovf");
    assert.ok(ovf > 0, p.join(", "));
    // What fitted went out in order; what did not was dropped.
    const tips = p.slice(0, ovf);
    assert.ok(tips.length > 0 && tips.length < 40);
    assert.deepEqual(
      tips,
      tips.map((_, k) => `tip 0x${(0x5010 + k * 0x10).toString(16)}`),
    );
    // Decoders reset their last IP at OVF: the FUP is uncompressed (checked by decoding here).
    assert.deepEqual(p.slice(ovf), ["ovf", "fup 0x5401", "tip 0x1005", "fup 0x1006", "tip.pgd -"]);
  });

  test("an overflow that ends while PacketEn = 0: OVF alone, then MODE.Exec and TIP.PGE", () => {
    const recs: object[] = [{ k: "cpl", cpl: 3 }, insn(0x4000, 1), { k: "cycles", n: 100 }];
    for (let k = 0; k < 40; k++) recs.push(insn(0x5000 + k * 0x10, 2, "jump-indirect"));
    recs.push(
      insn(0x5400, 2, "syscall"),
      { k: "cpl", cpl: 0 },
      { k: "cycles", n: 100 },
      insn("0xffffffff81000000", 3, "sysret"),
      { k: "cpl", cpl: 3 },
      insn(0x5402, 1),
    );
    const p = afterPsb(gen(jsonl(...recs), { ctl: { ...BRANCHES, OS: 0 } }, buffer));
    assert.deepEqual(p.slice(p.indexOf("ovf")), [
      "ovf",
      "mode.exec 64",
      "tip.pge 0x5402",
      "fup 0x5403",
      "tip.pgd -",
    ]);
  });

  test("without an internal buffer size nothing overflows", () => {
    const p = gen(burst(), { ctl: BRANCHES });
    assert.ok(!p.includes("ovf"));
    assert.equal(p.filter((l) => l.startsWith("tip ")).length, 40);
  });
});

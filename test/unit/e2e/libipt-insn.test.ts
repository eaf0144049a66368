/**
 * The libipt harness's insn mode, the independent checker of the end-to-end tests,
 * on traces written packet by packet: it must report the instructions, events and
 * errors libipt's instruction flow decoder finds, in its documented format.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Flag, Packet, PacketEncoder, PacketType } from "../../../src/packet/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-insn-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Code at 0x1000: mov rbx, rax; je 0x1006; nop; jmp rax. */
const CODE = Uint8Array.from([0x48, 0x89, 0xc3, 0x74, 0x01, 0x90, 0xff, 0xe0]);

function file(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

/** PSB+ (64-bit mode), then what `body` emits. */
function trace(
  body: (emit: (type: PacketType, set?: (p: Packet) => void) => void, enc: PacketEncoder) => void,
) {
  const enc = new PacketEncoder();
  const pkt = new Packet();
  const emit = (type: PacketType, set?: (p: Packet) => void) => {
    pkt.clear().type = type;
    set?.(pkt);
    assert.ok(enc.emit(pkt) > 0);
  };
  emit(PacketType.Psb);
  emit(PacketType.ModeExec, (p) => {
    p.flags = Flag.CsL;
  });
  emit(PacketType.PsbEnd);
  body(emit, enc);
  return enc.bytes().slice();
}

const tnt = (bits: string) => (p: Packet) => {
  p.a = bits.length;
  p.lo = Number.parseInt(bits, 2);
};

describe("libipt harness, insn mode", { skip }, () => {
  const code = file("code.bin", CODE);

  test("lists instructions and events in order", () => {
    const bytes = trace((emit, enc) => {
      enc.emitIp(PacketType.TipPge, 0, 0x1000);
      emit(PacketType.Tnt8, tnt("0"));
      enc.emitIp(PacketType.Tip, 0, 0x1000);
      emit(PacketType.Tnt8, tnt("1"));
      // "jmp rax" leaves the traced range for 0x2000.
      enc.emitIp(PacketType.TipPgd, 0, 0x2000);
    });
    const out = runInsnDecoder(bin, file("a.pt", bytes), [`${code}:0x1000`]);
    assert.ok(Array.isArray(out), JSON.stringify(out));
    assert.deepEqual(out, [
      "S 00000000",
      "V exec_mode suppressed update mode=0x3",
      "V enabled ip=0x1000 resumed=0x0",
      "I 0x1000 3 other",
      "I 0x1003 2 cond_jump",
      "I 0x1005 1 other",
      "I 0x1006 2 jump",
      "I 0x1000 3 other",
      "I 0x1003 2 cond_jump",
      "I 0x1006 2 jump",
      "V disabled ip=0x2000",
    ]);
  });

  test("maps a range of a file, and reports decode errors with their offset", () => {
    const padded = new Uint8Array(0x30);
    padded.set(CODE, 0x10);
    const bytes = trace((_emit, enc) => {
      enc.emitIp(PacketType.TipPge, 0, 0x1000);
      enc.emitIp(PacketType.Tip, 0, 0x2000);
    });
    const out = runInsnDecoder(bin, file("b.pt", bytes), [`${file("padded.bin", padded)}:0x10-0x18:0x1000`]);
    assert.ok(Array.isArray(out));
    // The TIP for "jmp rax" is missing: libipt runs into the end of the trace there.
    assert.deepEqual(out, [
      "S 00000000",
      "V exec_mode suppressed update mode=0x3",
      "V enabled ip=0x1000 resumed=0x0",
      "I 0x1000 3 other",
      "I 0x1003 2 cond_jump",
      "E 0000001b 8 bad_query",
    ]);
  });

  test("rejects a malformed map and a missing file", () => {
    const t = file(
      "c.pt",
      trace(() => {}),
    );
    const bad = runInsnDecoder(bin, t, ["no-address"]);
    assert.ok(!Array.isArray(bad));
    assert.match(bad.error, /expected FILE:ADDR or FILE:FROM-TO:ADDR/);
    const missing = runInsnDecoder(bin, t, [`${join(dir, "missing")}:0x1000`]);
    assert.ok(!Array.isArray(missing));
    assert.match(missing.error, /missing:0x1000: /);
  });
});

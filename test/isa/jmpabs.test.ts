import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeInsn, ExecMode, formatInsn, InsnClass, InsnFlag, InsnInfo } from "../../src/isa/index.js";

/** JMPABS 0x800000000000100d (REX2 map 0 W=0, A1, imm64), as libipt's tip-jmpabs test encodes it. */
const JMPABS = [0xd5, 0x00, 0xa1, 0x0d, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80];

test("JMPABS in 64-bit code: an indirect jump (it gets a TIP) that carries its absolute target", () => {
  const insn = new InsnInfo();
  const bytes = new Uint8Array([...JMPABS, 0xf4]);
  assert.equal(decodeInsn(bytes, 0, 0, 0x1000, ExecMode.Bits64, insn), 11);
  assert.equal(insn.iclass, InsnClass.JumpIndirect);
  assert.equal(insn.flags, InsnFlag.Target);
  assert.equal(insn.target, 0x800000000000100dn);
  assert.equal(formatInsn(bytes, 0, 0, 0x1000, ExecMode.Bits64), "jmpabs 0x800000000000100d");
  assert.equal(formatInsn(bytes, 0, 0, 0x1000, ExecMode.Bits64, "att"), "jmpabs $0x800000000000100d");
});

test("JMPABS: segment and lock/rep prefixes count in its length; 66, 67, REX.W or map 1 make it no JMPABS", () => {
  const insn = new InsnInfo();
  assert.equal(decodeInsn(new Uint8Array([0x2e, 0x3e, ...JMPABS]), 0, 0, 0, ExecMode.Bits64, insn), 13);
  assert.equal(insn.target, 0x800000000000100dn);
  // Not a JMPABS: libipt 2.0's length, D5 being AAD ib to it (2 bytes after the prefixes).
  for (const [other, length] of [
    [[0x66, ...JMPABS], 3],
    [[0x67, ...JMPABS], 3],
    [[0xd5, 0x08, ...JMPABS.slice(2)], 2],
    [[0xd5, 0x80, ...JMPABS.slice(2)], 2],
    [JMPABS.slice(0, 10), 2],
    [[0x2e, 0x2e, 0x2e, 0x2e, 0x2e, ...JMPABS], 7], // 16 bytes
  ] as [number[], number][]) {
    assert.equal(decodeInsn(new Uint8Array(other), 0, 0, 0, ExecMode.Bits64, insn), length, other.join(","));
    assert.equal(insn.iclass, InsnClass.Other);
    assert.equal(insn.flags, 0);
  }
});

test("outside 64-bit code D5 is AAD, not a REX2 prefix", () => {
  const insn = new InsnInfo();
  assert.equal(decodeInsn(new Uint8Array(JMPABS), 0, 0, 0, ExecMode.Bits32, insn), 2);
  assert.equal(insn.iclass, InsnClass.Other);
});

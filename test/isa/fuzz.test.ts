/**
 * Random bytes: decodeInsn never throws, returns a length in 1..15 that fits the
 * bytes or BadInsn, returns libipt's length (ildLength), and where iced-x86 measures
 * the same length agrees with iced used directly (flow control, and the branch target
 * iced computes from a real IP in BigInt).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { Code, Decoder, DecoderOptions, FlowControl, Instruction, OpKind } from "iced-x86";
import { ErrorCode } from "../../src/base/errors.js";
import { decodeInsn, formatInsn } from "../../src/isa/decode.js";
import { ildLength } from "../../src/isa/ild.js";
import { jmpabsLength } from "../../src/isa/jmpabs.js";
import {
  CofiType,
  cofiType,
  EXEC_MODE_BITS,
  ExecMode,
  INSN_CLASS_COUNT,
  InsnClass,
  InsnFlag,
  InsnInfo,
} from "../../src/isa/types.js";

const RUNS = 20000;
const mode = fc.constantFrom(ExecMode.Bits16, ExecMode.Bits32, ExecMode.Bits64);
const u32 = fc.nat({ max: 0xffffffff });

/** Prefixes and opcodes of branches, so that branches are common among the random bytes. */
const BRANCHY = [
  [0x0f, 0x84],
  [0x74],
  [0xe8],
  [0xe9],
  [0xeb],
  [0xe0],
  [0xe1],
  [0xe2],
  [0xe3],
  [0xc7, 0xf8],
  [0xff],
  [0xc3],
  [0xcb],
  [0x9a],
  [0xea],
  [0x0f, 0x01],
  [0x66],
  [0x67],
  [0x48],
  [0xf3],
  [0x2e],
];
const bytes = fc.oneof(
  fc.uint8Array({ minLength: 0, maxLength: 20 }),
  fc
    .tuple(
      fc.array(fc.constantFrom(...BRANCHY), { minLength: 1, maxLength: 3 }),
      fc.uint8Array({ maxLength: 12 }),
    )
    .map(([head, tail]) => Uint8Array.from([...head.flat(), ...tail])),
);

test("random bytes: never throws; length in 1..15 within the bytes, or BadInsn", () => {
  const out = new InsnInfo();
  fc.assert(
    fc.property(bytes, fc.nat({ max: 24 }), mode, u32, u32, (b, offset, m, hi, lo) => {
      const status = decodeInsn(b, offset, hi, lo, m, out);
      if (status < 0) {
        assert.equal(status, -ErrorCode.BadInsn);
        assert.equal(out.length, 0);
        return;
      }
      assert.ok(status >= 1 && status <= 15 && offset + status <= b.length);
      assert.equal(out.length, status);
      assert.ok(out.iclass >= 0 && out.iclass < INSN_CLASS_COUNT);
      assert.ok(out.targetHi >>> 0 === out.targetHi && out.targetLo >>> 0 === out.targetLo);
      if (m !== ExecMode.Bits64) assert.equal(out.targetHi, 0);
      assert.equal(typeof formatInsn(b, offset, hi, lo, m), "string");
    }),
    { numRuns: RUNS },
  );
});

test("random bytes: libipt's length, and where iced-x86 agrees, its answers at the real IP", () => {
  const out = new InsnInfo();
  const ins = new Instruction();
  try {
    fc.assert(
      fc.property(bytes, mode, u32, u32, (b, m, hi, lo) => {
        const bits = EXEC_MODE_BITS[m]!;
        const ip =
          m === ExecMode.Bits64
            ? (BigInt(hi) << 32n) | BigInt(lo)
            : BigInt(m === ExecMode.Bits32 ? lo : lo & 0xffff);
        const decoder = new Decoder(bits, b.subarray(0, 15), DecoderOptions.None);
        decoder.ip = ip;
        decoder.decodeOut(ins);
        decoder.free();
        const status = decodeInsn(b, 0, hi, m === ExecMode.Bits16 ? lo & 0xffff : lo, m, out);
        // The length is libipt's (ild.ts; test/isa/ild-libipt.test.ts compares it with
        // libipt); where iced measures the same, the rest is iced's.
        const length = ildLength(b, 0, Math.min(15, b.length), m);
        if (length < 0) {
          assert.equal(status, -ErrorCode.BadInsn);
          return;
        }
        if (ins.code === Code.INVALID || ins.length !== length) {
          const jmpabs =
            ins.code === Code.INVALID && m === ExecMode.Bits64 && jmpabsLength(b, 0, b.length) > 0;
          if (!jmpabs) assert.equal(status, length);
          return;
        }
        assert.equal(status, ins.length);
        const flow = ins.flowControl;
        const cofi = cofiType(out.iclass);
        // A change of flow exactly when iced says so (XBEGIN: abort target only).
        const icedChanges = flow !== FlowControl.Next && flow !== FlowControl.XbeginXabortXend;
        assert.equal(cofi !== CofiType.None, icedChanges, `class ${out.iclass}, flow ${flow}`);
        const is = (iclass: InsnClass) => out.iclass === iclass;
        assert.equal(flow === FlowControl.ConditionalBranch, is(InsnClass.CondBranch));
        assert.equal(ins.isCallNear, is(InsnClass.Call));
        assert.equal(ins.isCallNearIndirect, is(InsnClass.CallIndirect));
        assert.equal(ins.isJmpShortOrNear, is(InsnClass.Jump));
        assert.equal(ins.isJmpNearIndirect, is(InsnClass.JumpIndirect));
        assert.equal(ins.isCallFar || ins.isCallFarIndirect, is(InsnClass.FarCall));
        assert.equal(ins.isJmpFar || ins.isJmpFarIndirect, is(InsnClass.FarJump));
        const kind = ins.op0Kind;
        const near =
          kind === OpKind.NearBranch16 || kind === OpKind.NearBranch32 || kind === OpKind.NearBranch64;
        assert.equal(Boolean(out.flags & InsnFlag.Target), near);
        if (near) {
          assert.equal(out.target, ins.nearBranchTarget);
          const mask =
            kind === OpKind.NearBranch16
              ? 0xffffn
              : kind === OpKind.NearBranch32
                ? 0xffffffffn
                : (1n << 64n) - 1n;
          const zero = out.iclass === InsnClass.Call && ((ins.nearBranchTarget - ins.nextIP) & mask) === 0n;
          assert.equal(Boolean(out.flags & InsnFlag.ZeroLengthCall), zero);
        }
      }),
      { numRuns: RUNS },
    );
  } finally {
    ins.free();
  }
});

/**
 * The flow layer's parts on their own: the RET-compression stack against a model,
 * libipt's instruction classes from the isa layer's, and the IP-filter check against
 * a BigInt model.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { toBigInt } from "../../src/base/halves.js";
import {
  AddrFilterCheck,
  classify,
  FlowClass,
  InsnFact,
  RETURN_STACK_SIZE,
  ReturnStack,
} from "../../src/flow/index.js";
import { decodeInsn, ExecMode, InsnInfo } from "../../src/isa/index.js";
import { hex } from "../isa/helpers.js";

test("return stack: pops what was pushed, the newest 64 at most", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constant(null)), {
        maxLength: 300,
      }),
      (ops) => {
        const stack = new ReturnStack();
        const model: bigint[] = [];
        for (const op of ops) {
          if (op === null) {
            const status = stack.pop();
            const want = model.pop();
            if (want === undefined) assert.equal(status, -ErrorCode.RetStackEmpty);
            else assert.equal(toBigInt(stack.poppedHi, stack.poppedLo), want);
          } else {
            stack.push(Number(op >> 32n), Number(op & 0xffffffffn));
            model.push(op);
            if (model.length > RETURN_STACK_SIZE) model.shift();
          }
          assert.equal(stack.length, model.length);
          assert.equal(stack.isEmpty, model.length === 0);
        }
      },
    ),
  );
});

/** classify() of the instruction `bytes` decodes to in 64-bit code. */
function flowOf(bytes: string, mode: ExecMode = ExecMode.Bits64): number {
  const raw = hex(bytes);
  const info = new InsnInfo();
  const size = decodeInsn(raw, 0, 0, 0x1000, mode, info);
  assert.ok(size > 0, `${bytes} decodes`);
  return classify(info.iclass, raw, 0, size);
}

const F = FlowClass;
const fact = (f: number): number => f << 4;

test("classes: libipt's view of branches and far transfers", () => {
  const cases: [string, number][] = [
    ["90", F.Other],
    ["74 00", F.CondJump | fact(InsnFact.Direct)],
    ["e2 fe", F.CondJump | fact(InsnFact.Direct)],
    ["eb 00", F.Jump | fact(InsnFact.Direct)],
    ["e8 00 00 00 00", F.Call | fact(InsnFact.Direct)],
    ["ff e0", F.Jump],
    ["ff d0", F.Call],
    ["c3", F.Return],
    ["c2 08 00", F.Return],
    ["ff 18", F.FarCall],
    ["ff 28", F.FarJump],
    ["cb", F.FarReturn],
    ["cd 80", F.FarCall | fact(InsnFact.SoftInt)],
    ["cc", F.FarCall | fact(InsnFact.SoftInt)],
    ["48 cf", F.FarReturn | fact(InsnFact.IretLike)],
    ["0f 05", F.FarCall | fact(InsnFact.SyscallLike)],
    ["0f 34", F.FarCall | fact(InsnFact.SyscallLike)],
    ["48 0f 07", F.FarReturn | fact(InsnFact.IretLike)],
    ["0f 35", F.FarReturn | fact(InsnFact.IretLike)],
    ["0f 01 c1", F.FarCall],
    ["0f 01 c2", F.FarReturn | fact(InsnFact.VmEntry)],
    ["0f 01 c3", F.FarReturn | fact(InsnFact.VmEntry)],
    ["f3 0f 01 ec", F.FarReturn | fact(InsnFact.Uiret)],
    ["f2 0f 01 ca", F.FarReturn | fact(InsnFact.IretLike)],
    ["f3 0f 01 ca", F.FarReturn | fact(InsnFact.IretLike)],
    // CLAC and TDCALL share the group but are nothing special.
    ["0f 01 ca", F.Other],
    ["66 0f 01 cc", F.Other],
    // AMD's VMRUN and VMMCALL, UD2, HLT, XBEGIN are nothing special to libipt.
    ["0f 01 d8", F.Other],
    ["0f 01 d9", F.Other],
    ["0f 0b", F.Other],
    ["f4", F.Other],
    ["c7 f8 00 00 00 00", F.Other],
    ["0f 22 d8", F.Other | fact(InsnFact.MovCr3)],
    ["0f 22 c0", F.Other],
    ["0f c7 30", F.Other | fact(InsnFact.Vmptrld)],
    ["f3 48 0f ae e0", F.Ptwrite],
  ];
  for (const [bytes, want] of cases) assert.equal(flowOf(bytes), want, bytes);
  // Far call and jump with a pointer exist outside 64-bit code.
  assert.equal(flowOf("9a 00 00 00 00 00 00", ExecMode.Bits32), F.FarCall);
  assert.equal(flowOf("ea 00 00 00 00 00 00", ExecMode.Bits32), F.FarJump);
});

test("JMPABS (APX) is a jump that gets a TIP, not a direct one", () => {
  assert.equal(flowOf("d5 00 a1 0d 10 00 00 00 00 00 00"), F.Jump);
  assert.equal(flowOf("2e d5 00 a1 0d 10 00 00 00 00 00 00"), F.Jump);
});

const U64 = (1n << 64n) - 1n;

/** libipt's filter rule, on BigInts. */
function modelAllows(cfg: number[], a: bigint[], b: bigint[], ip: bigint): boolean {
  for (let n = 0; n < 4; n++) if (cfg[n] === 2 && a[n]! <= ip && ip <= b[n]!) return false;
  if (!cfg.includes(1)) return true;
  for (let n = 0; n < 4; n++) if (cfg[n] === 1 && a[n]! <= ip && ip <= b[n]!) return true;
  return false;
}

test("IP filter: TraceStop ranges off, FilterEn ranges on, as libipt checks them", () => {
  const addr = fc.oneof(fc.bigInt({ min: 0n, max: U64 }), fc.bigInt({ min: 0x1000n, max: 0x2000n }));
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 4, maxLength: 4 }),
      fc.array(addr, { minLength: 4, maxLength: 4 }),
      fc.array(addr, { minLength: 4, maxLength: 4 }),
      fc.array(addr, { minLength: 1, maxLength: 20 }),
      (cfg, a, b, ips) => {
        const check = new AddrFilterCheck({
          cfg: cfg as [number, number, number, number],
          a: a as [bigint, bigint, bigint, bigint],
          b: b as [bigint, bigint, bigint, bigint],
        });
        assert.equal(
          check.configured,
          cfg.some((c) => c !== 0),
        );
        for (const ip of [...ips, ...a, ...b]) {
          assert.equal(check.allows(Number(ip >> 32n), Number(ip & 0xffffffffn)), modelAllows(cfg, a, b, ip));
        }
      },
    ),
  );
});

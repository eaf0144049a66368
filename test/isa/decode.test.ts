/**
 * Known answers: hand-written bytes for every instruction class in 16/32/64-bit
 * code, direct targets with their wrap-around, SDM Table 33-1 row by row, failures,
 * and the formatter.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { decodeInsn, formatInsn } from "../../src/isa/decode.js";
import {
  COFI_TYPE,
  CofiType,
  cofiType,
  ExecMode,
  execModeFromCs,
  INSN_CLASS_COUNT,
  INSN_CLASS_NAMES,
  InsnClass,
  InsnFlag,
  InsnInfo,
} from "../../src/isa/types.js";
import { decode, hex } from "./helpers.js";

const { Bits16, Bits32, Bits64 } = ExecMode;
const BAD = -ErrorCode.BadInsn;
const K = InsnClass;

/** [mode, bytes, length, class] */
type Case = [ExecMode, string, number, InsnClass];

function check(cases: Case[]): void {
  for (const [mode, bytes, length, iclass] of cases) {
    const d = decode(mode, bytes);
    const what = `${bytes} in mode ${mode}`;
    assert.equal(d.status, length, `${what}: length`);
    assert.equal(d.length, length, `${what}: out.length`);
    assert.equal(INSN_CLASS_NAMES[d.iclass], INSN_CLASS_NAMES[iclass], `${what}: class`);
  }
}

describe("classes", () => {
  test("conditional branches: Jcc, J*CXZ, LOOP*", () => {
    const cases: Case[] = [];
    for (let cc = 0; cc < 16; cc++) {
      const op = cc.toString(16);
      for (const mode of [Bits16, Bits32, Bits64] as ExecMode[]) {
        cases.push([mode, `7${op} 10`, 2, K.CondBranch]);
        cases.push([
          mode,
          `0f 8${op} 10 00${mode === Bits16 ? "" : " 00 00"}`,
          mode === Bits16 ? 4 : 6,
          K.CondBranch,
        ]);
      }
    }
    cases.push(
      [Bits64, "e3 fe", 2, K.CondBranch], // jrcxz
      [Bits64, "67 e3 fe", 3, K.CondBranch], // jecxz
      [Bits32, "e3 fe", 2, K.CondBranch], // jecxz
      [Bits32, "67 e3 fe", 3, K.CondBranch], // jcxz
      [Bits16, "e3 fe", 2, K.CondBranch], // jcxz
      [Bits64, "e2 fe", 2, K.CondBranch], // loop
      [Bits64, "e1 fe", 2, K.CondBranch], // loope
      [Bits64, "e0 fe", 2, K.CondBranch], // loopne
      [Bits32, "e2 fe", 2, K.CondBranch],
      [Bits16, "e2 fe", 2, K.CondBranch],
      [Bits64, "66 0f 84 10 00 00 00", 7, K.CondBranch], // 66 ignored: still rel32 (Intel)
    );
    check(cases);
  });

  test("direct jumps and calls", () => {
    check([
      [Bits64, "e9 10 00 00 00", 5, K.Jump],
      [Bits64, "eb 10", 2, K.Jump],
      [Bits64, "e8 10 00 00 00", 5, K.Call],
      [Bits64, "66 e9 10 00 00 00", 6, K.Jump],
      [Bits64, "66 e8 10 00 00 00", 6, K.Call],
      [Bits32, "e9 10 00 00 00", 5, K.Jump],
      [Bits32, "e8 10 00 00 00", 5, K.Call],
      [Bits32, "66 e9 10 00", 4, K.Jump], // rel16
      [Bits32, "66 e8 10 00", 4, K.Call],
      [Bits16, "e9 10 00", 3, K.Jump],
      [Bits16, "e8 10 00", 3, K.Call],
      [Bits16, "66 e8 10 00 00 00", 6, K.Call], // rel32
      [Bits64, "f2 e9 10 00 00 00", 6, K.Jump], // bnd jmp
    ]);
  });

  test("indirect jumps, calls and returns", () => {
    check([
      [Bits64, "ff d0", 2, K.CallIndirect], // call rax
      [Bits64, "41 ff d3", 3, K.CallIndirect], // call r11
      [Bits64, "ff 15 10 00 00 00", 6, K.CallIndirect], // call [rip+0x10]
      [Bits64, "ff e0", 2, K.JumpIndirect], // jmp rax
      [Bits64, "ff 25 10 00 00 00", 6, K.JumpIndirect], // jmp [rip+0x10]
      [Bits64, "3e ff e0", 3, K.JumpIndirect], // notrack jmp rax
      [Bits64, "ff 24 c5 00 10 00 00", 7, K.JumpIndirect], // jmp [rax*8+0x1000]
      [Bits64, "66 ff d0", 3, K.CallIndirect],
      [Bits32, "ff d0", 2, K.CallIndirect],
      [Bits32, "ff 20", 2, K.JumpIndirect],
      [Bits16, "ff d0", 2, K.CallIndirect],
      [Bits16, "ff 27", 2, K.JumpIndirect], // jmp [bx]
      [Bits64, "c3", 1, K.Return],
      [Bits64, "c2 08 00", 3, K.Return],
      [Bits64, "f3 c3", 2, K.Return], // rep ret
      [Bits64, "66 c3", 2, K.Return],
      [Bits32, "c3", 1, K.Return],
      [Bits16, "c2 04 00", 3, K.Return],
    ]);
  });

  test("far transfers", () => {
    check([
      [Bits64, "cb", 1, K.FarReturn],
      [Bits64, "ca 08 00", 3, K.FarReturn],
      [Bits64, "48 cb", 2, K.FarReturn],
      [Bits32, "cb", 1, K.FarReturn],
      [Bits16, "ca 02 00", 3, K.FarReturn],
      [Bits64, "cf", 1, K.Iret], // iretd
      [Bits64, "48 cf", 2, K.Iret], // iretq
      [Bits32, "cf", 1, K.Iret],
      [Bits16, "cf", 1, K.Iret],
      [Bits32, "66 cf", 2, K.Iret],
      [Bits64, "0f 05", 2, K.Syscall],
      [Bits64, "0f 34", 2, K.Syscall], // sysenter
      [Bits32, "0f 34", 2, K.Syscall],
      [Bits64, "0f 07", 2, K.Sysret],
      [Bits64, "48 0f 07", 3, K.Sysret], // sysretq
      [Bits32, "0f 35", 2, K.Sysret], // sysexit
      [Bits64, "48 0f 35", 3, K.Sysret], // sysexitq
      [Bits64, "cd 80", 2, K.Interrupt],
      [Bits32, "cd 80", 2, K.Interrupt],
      [Bits16, "cd 21", 2, K.Interrupt],
      [Bits64, "cc", 1, K.Interrupt], // int3
      [Bits64, "f1", 1, K.Interrupt], // int1 / icebp
      [Bits32, "ce", 1, K.Interrupt], // into
      [Bits64, "ff 1c 24", 3, K.FarCall], // call far [rsp]
      [Bits64, "48 ff 18", 3, K.FarCall], // call far m16:64
      [Bits64, "ff 2c 24", 3, K.FarJump], // jmp far [rsp]
      [Bits32, "9a 00 10 00 00 08 00", 7, K.FarCall], // call 0x8:0x1000
      [Bits32, "ea 00 10 00 00 08 00", 7, K.FarJump], // jmp 0x8:0x1000
      [Bits16, "9a 00 10 08 00", 5, K.FarCall],
      [Bits16, "ea 00 10 08 00", 5, K.FarJump],
      [Bits64, "0f 01 c2", 3, K.VmEntry], // vmlaunch
      [Bits64, "0f 01 c3", 3, K.VmEntry], // vmresume
      [Bits64, "0f 01 d8", 3, K.VmEntry], // AMD vmrun
      [Bits64, "0f 01 c1", 3, K.VmExit], // vmcall
      [Bits64, "0f 01 d9", 3, K.VmExit], // AMD vmmcall
      [Bits64, "0f 0b", 2, K.Ud], // ud2
      // ud1, ud0: libipt 2.0 gives them no ModRM (so ptxed goes on 2 bytes later).
      [Bits64, "0f b9 c0", 2, K.Ud],
      [Bits64, "0f ff c0", 2, K.Ud],
      [Bits64, "f3 0f 01 ec", 4, K.FarOther], // uiret
      [Bits64, "f3 0f 01 ca", 4, K.FarOther], // eretu
      [Bits64, "f2 0f 01 ca", 4, K.FarOther], // erets
      [Bits64, "0f aa", 2, K.FarOther], // rsm
    ]);
  });

  test("instructions Intel PT emits other packets for", () => {
    check([
      [Bits64, "f3 0f ae e0", 4, K.PtWrite], // ptwrite eax
      [Bits64, "f3 48 0f ae e0", 5, K.PtWrite], // ptwrite rax
      [Bits64, "f3 0f ae 20", 4, K.PtWrite], // ptwrite dword [rax]
      [Bits32, "f3 0f ae e0", 4, K.PtWrite],
      [Bits64, "0f 22 d8", 3, K.MovCr3], // mov cr3, rax
      [Bits64, "41 0f 22 d8", 4, K.MovCr3], // mov cr3, r8
      [Bits32, "0f 22 d8", 3, K.MovCr3], // mov cr3, eax
      [Bits64, "0f 22 c0", 3, K.Other], // mov cr0, rax
      [Bits64, "0f 22 e0", 3, K.Other], // mov cr4, rax
      [Bits64, "0f 20 d8", 3, K.Other], // mov rax, cr3 (a read)
      [Bits64, "c7 f8 10 00 00 00", 6, K.Xbegin],
      [Bits64, "0f 01 d5", 3, K.Xend],
      [Bits64, "c6 f8 ff", 3, K.Xabort],
      [Bits64, "0f 01 c9", 3, K.Mwait],
      [Bits64, "f4", 1, K.Hlt],
      [Bits64, "0f c7 30", 3, K.Vmptrld], // vmptrld [rax]
    ]);
  });

  test("ordinary instructions are Other", () => {
    check([
      [Bits64, "90", 1, K.Other],
      [Bits64, "48 89 5c 24 10", 5, K.Other],
      [Bits64, "f3 0f 1e fa", 4, K.Other], // endbr64
      [Bits64, "66 2e 0f 1f 84 00 00 00 00 00", 10, K.Other], // long nop
      [Bits64, "c5 fd 6f 06", 4, K.Other], // vmovdqa ymm0, [rsi] (VEX)
      [Bits64, "62 f1 7c 48 28 06", 6, K.Other], // vmovaps zmm0, [rsi] (EVEX)
      [Bits64, "48 b8 88 77 66 55 44 33 22 11", 10, K.Other], // movabs
      [Bits64, "0f 01 d0", 3, K.Other], // xgetbv
      [Bits64, "0f a2", 2, K.Other], // cpuid
      [Bits64, "0f 01 fb", 3, K.Other], // AMD mwaitx is not MWAIT
      [Bits32, "c4 06", 2, K.Other], // les eax, [esi] (not VEX in 32-bit code)
      [Bits32, "62 06", 2, K.Other], // bound eax, [esi]
      [Bits16, "8b 07", 2, K.Other], // mov ax, [bx]
    ]);
  });
});

describe("SDM Table 33-1 (COFI type for branch instructions), row by row", () => {
  // Every instruction the table names, in a mode where it exists, with its row.
  const rows: [CofiType, ExecMode, string, string][] = [
    ...["JO", "JNO", "JB/JC/JNAE", "JAE/JNB/JNC", "JE/JZ", "JNE/JNZ", "JBE/JNA", "JA/JNBE"].flatMap(
      (name, i): [CofiType, ExecMode, string, string][] => [
        [CofiType.Conditional, Bits64, `7${i.toString(16)} 00`, name],
        [CofiType.Conditional, Bits64, `0f 8${i.toString(16)} 00 00 00 00`, name],
      ],
    ),
    ...["JS", "JNS", "JP/JPE", "JNP/JPO", "JL/JNGE", "JGE/JNL", "JLE/JNG", "JG/JNLE"].flatMap(
      (name, i): [CofiType, ExecMode, string, string][] => [
        [CofiType.Conditional, Bits64, `7${(i + 8).toString(16)} 00`, name],
        [CofiType.Conditional, Bits64, `0f 8${(i + 8).toString(16)} 00 00 00 00`, name],
      ],
    ),
    [CofiType.Conditional, Bits16, "e3 00", "JCXZ"],
    [CofiType.Conditional, Bits32, "e3 00", "JECXZ"],
    [CofiType.Conditional, Bits64, "e3 00", "JRCXZ"],
    [CofiType.Conditional, Bits64, "e2 00", "LOOP"],
    [CofiType.Conditional, Bits64, "e1 00", "LOOPE/LOOPZ"],
    [CofiType.Conditional, Bits64, "e0 00", "LOOPNE/LOOPNZ"],
    [CofiType.Direct, Bits64, "e9 00 00 00 00", "JMP (E9 xx)"],
    [CofiType.Direct, Bits64, "eb 00", "JMP (EB xx)"],
    [CofiType.Direct, Bits64, "e8 00 00 00 00", "CALL (E8 xx)"],
    [CofiType.Indirect, Bits64, "ff e0", "JMP (FF /4)"],
    [CofiType.Indirect, Bits64, "ff d0", "CALL (FF /2)"],
    [CofiType.Indirect, Bits64, "c3", "RET (C3)"],
    [CofiType.Indirect, Bits64, "c2 00 00", "RET (C2 xx)"],
    [CofiType.Far, Bits64, "f1", "INT1"],
    [CofiType.Far, Bits64, "cc", "INT3"],
    [CofiType.Far, Bits64, "cd 03", "INT n"],
    [CofiType.Far, Bits32, "ce", "INTO"],
    [CofiType.Far, Bits16, "cf", "IRET"],
    [CofiType.Far, Bits32, "cf", "IRETD"],
    [CofiType.Far, Bits64, "48 cf", "IRETQ"],
    [CofiType.Far, Bits32, "ea 00 00 00 00 10 00", "JMP (EA xx)"],
    [CofiType.Far, Bits64, "ff 28", "JMP (FF /5)"],
    [CofiType.Far, Bits32, "9a 00 00 00 00 10 00", "CALL (9A xx)"],
    [CofiType.Far, Bits64, "ff 18", "CALL (FF /3)"],
    [CofiType.Far, Bits64, "cb", "RET (CB)"],
    [CofiType.Far, Bits64, "ca 00 00", "RET (CA xx)"],
    [CofiType.Far, Bits64, "0f 05", "SYSCALL"],
    [CofiType.Far, Bits64, "0f 07", "SYSRET"],
    [CofiType.Far, Bits32, "0f 34", "SYSENTER"],
    [CofiType.Far, Bits32, "0f 35", "SYSEXIT"],
    [CofiType.Far, Bits64, "0f 01 c2", "VMLAUNCH"],
    [CofiType.Far, Bits64, "0f 01 c3", "VMRESUME"],
  ];
  for (const [cofi, mode, bytes, name] of rows) {
    test(`${name}: ${bytes}`, () => {
      const d = decode(mode, bytes);
      assert.equal(d.status, hex(bytes).length);
      assert.equal(cofiType(d.iclass), cofi);
    });
  }

  test("every class has a name and a Table 33-1 category", () => {
    assert.equal(INSN_CLASS_NAMES.length, INSN_CLASS_COUNT);
    assert.equal(COFI_TYPE.length, INSN_CLASS_COUNT);
    assert.equal(Object.keys(InsnClass).length, INSN_CLASS_COUNT);
    assert.equal(cofiType(K.Other), CofiType.None);
    assert.equal(cofiType(K.PtWrite), CofiType.None);
    assert.equal(cofiType(K.Xbegin), CofiType.None);
    assert.equal(cofiType(K.Ud), CofiType.Far);
    assert.equal(cofiType(K.VmExit), CofiType.Far);
    assert.equal(cofiType(99), CofiType.None);
  });
});

describe("direct targets", () => {
  const target = (mode: ExecMode, bytes: string, ip: bigint) => {
    const d = decode(mode, bytes, ip);
    assert.ok(d.status > 0, `${bytes} decodes`);
    assert.ok(d.flags & InsnFlag.Target, `${bytes} has a target`);
    return d.target;
  };

  test("64-bit: ip + length + displacement, forward and backward, across 2^32 and 2^64", () => {
    assert.equal(target(Bits64, "0f 84 10 00 00 00", 0x401000n), 0x401016n);
    assert.equal(target(Bits64, "eb fe", 0x401000n), 0x401000n);
    assert.equal(target(Bits64, "eb 80", 0x401000n), 0x400f82n);
    assert.equal(target(Bits64, "e8 f0 ff ff ff", 0x401000n), 0x400ff5n);
    assert.equal(target(Bits64, "e9 00 00 00 80", 0x1_0000_0000n), 0x8000_0005n); // disp -2^31
    assert.equal(target(Bits64, "e9 ff ff ff 7f", 0x1_0000_0000n), 0x1_8000_0004n); // disp 2^31-1
    assert.equal(target(Bits64, "e9 fb ff ff 7f", 0x10n), 0x8000_0010n); // length + disp = 2^31
    assert.equal(target(Bits64, "e9 20 00 00 00", 0xffff_fff0n), 0x1_0000_0015n); // carry into the high half
    assert.equal(target(Bits64, "eb e0", 0x1_0000_0010n), 0xffff_fff2n); // borrow from the high half
    assert.equal(target(Bits64, "e8 00 00 00 81", 0xffff_ffff_8100_0000n), 0xffff_ffff_0200_0005n);
    assert.equal(target(Bits64, "e9 20 00 00 00", 0xffff_ffff_ffff_fff0n), 0x15n); // wraps at 2^64
    assert.equal(target(Bits64, "eb 80", 0x10n), 0xffff_ffff_ffff_ff92n); // below 0
    assert.equal(target(Bits64, "66 e9 10 00 00 00", 0x1000n), 0x1016n); // 66: still rel32
    assert.equal(target(Bits64, "e3 10", 0x1000n), 0x1012n);
    assert.equal(target(Bits64, "e2 f0", 0x1000n), 0xff2n);
    assert.equal(target(Bits64, "c7 f8 10 00 00 00", 0x1000n), 0x1016n); // xbegin's fallback
  });

  test("32-bit: wraps at 2^32, and at 2^16 with a 16-bit operand size", () => {
    assert.equal(target(Bits32, "e9 20 00 00 00", 0xffff_fff0n), 0x15n);
    assert.equal(target(Bits32, "eb 80", 0x10n), 0xffff_ff92n);
    assert.equal(target(Bits32, "e8 00 00 00 00", 0x8048000n), 0x8048005n);
    assert.equal(target(Bits32, "66 e9 20 00", 0xfff0n), 0x14n); // rel16: IP masked to 16 bits
    assert.equal(target(Bits32, "66 e9 20 00", 0x1_fff0n), 0x14n);
    assert.equal(target(Bits32, "0f 84 00 00 00 00", 0xffff_fffan), 0n);
  });

  test("16-bit: wraps at 2^16, unless a 66 prefix makes the operand 32-bit", () => {
    assert.equal(target(Bits16, "eb 20", 0xfff0n), 0x12n);
    assert.equal(target(Bits16, "e9 fd ff", 0n), 0n);
    assert.equal(target(Bits16, "e9 00 80", 0x100n), 0x8103n);
    assert.equal(target(Bits16, "74 80", 0x10n), 0xff92n);
    assert.equal(target(Bits16, "e8 00 00", 0xfffdn), 0n); // zero-length call wrapping to 0
    assert.equal(target(Bits16, "66 e9 00 00 01 00", 0xfff0n), 0x1_fff6n);
  });

  test("one encoding in several modes: XBEGIN's operand size follows the mode", () => {
    // iced has one Code for XBEGIN rel32 in 32- and 64-bit code; the answer must not
    // depend on which mode saw it first.
    assert.equal(target(Bits64, "c7 f8 10 00 00 00", 0x1_0000_1000n), 0x1_0000_1016n);
    assert.equal(target(Bits32, "c7 f8 10 00 00 00", 0xffff_fff0n), 0x6n);
    assert.equal(target(Bits64, "c7 f8 10 00 00 00", 0xffff_fff0n), 0x1_0000_0006n);
    // SDM XBEGIN: outside 64-bit mode, fallbackEIP := EIP + SignExtend32(rel16), unmasked.
    assert.equal(target(Bits16, "c7 f8 10 00", 0xfff0n), 0x1_0004n);
    assert.equal(target(Bits32, "66 c7 f8 10 00", 0xfff0n), 0x1_0005n);
  });

  test("zero-length calls (displacement 0) are flagged; other calls and jumps are not", () => {
    for (const [mode, bytes] of [
      [Bits64, "e8 00 00 00 00"],
      [Bits32, "e8 00 00 00 00"],
      [Bits16, "e8 00 00"],
      [Bits32, "66 e8 00 00"],
      [Bits64, "66 e8 00 00 00 00"],
    ] as [ExecMode, string][]) {
      const d = decode(mode, bytes, 0xfffen);
      assert.equal(d.iclass, K.Call, bytes);
      assert.ok(d.flags & InsnFlag.ZeroLengthCall, `${bytes} is a zero-length call`);
    }
    for (const [mode, bytes] of [
      [Bits64, "e8 01 00 00 00"],
      [Bits64, "e8 fb ff ff ff"], // a call to itself
      [Bits64, "e9 00 00 00 00"],
      [Bits64, "eb 00"],
      [Bits64, "74 00"],
      [Bits16, "e8 00 01"],
    ] as [ExecMode, string][]) {
      assert.equal(decode(mode, bytes).flags & InsnFlag.ZeroLengthCall, 0, bytes);
    }
  });

  test("only direct branches and XBEGIN carry a target", () => {
    for (const bytes of ["ff d0", "ff 25 10 00 00 00", "c3", "cb", "0f 05", "90", "cc", "ff 1c 24"]) {
      const d = decode(Bits64, bytes, 0x1000n);
      assert.equal(d.flags, 0, bytes);
      assert.equal(d.target, undefined, bytes);
    }
  });

  test("InsnInfo.target is the exact 64-bit value", () => {
    const out = new InsnInfo();
    assert.equal(decodeInsn(hex("e8 00 00 00 00"), 0, 0xffffffff, 0xfffffff0, Bits64, out), 5);
    assert.equal(out.targetHi, 0xffffffff);
    assert.equal(out.targetLo, 0xfffffff5);
    assert.equal(out.target, 0xffff_ffff_ffff_fff5n);
    // Signed forms of the halves are the same IP.
    assert.equal(decodeInsn(hex("e8 00 00 00 00"), 0, -1, -16, Bits64, out), 5);
    assert.equal(out.target, 0xffff_ffff_ffff_fff5n);
    const copy = new InsnInfo().copyFrom(out);
    assert.deepEqual(copy, out);
    out.clear();
    assert.equal(out.target, undefined);
    assert.equal(out.length, 0);
  });
});

describe("failures", () => {
  test("undefined encodings have libipt's length and class, as ptxed decodes them", () => {
    check([
      [Bits64, "06", 1, K.Other], // push es: not in 64-bit mode
      [Bits64, "ce", 1, K.Interrupt], // into: not in 64-bit mode
      [Bits64, "9a 00 00 00 00 08 00", 7, K.FarCall], // call far ptr: not in 64-bit mode
      [Bits64, "ea 00 00 00 00 08 00", 7, K.FarJump],
      [Bits64, "d6", 1, K.Other], // salc: not in 64-bit mode
      [Bits64, "ff ff ff", 2, K.Other], // ff /7
      [Bits64, "ff d8", 2, K.FarCall], // call far needs memory
      [Bits64, "ff e8", 2, K.FarJump], // jmp far needs memory
      [Bits64, "f0 90", 2, K.Other], // lock nop
      [Bits64, "f0 c3", 2, K.Return], // lock ret
      [Bits64, "f0 ff d0", 3, K.CallIndirect], // lock call rax
      [Bits64, "44 0f 22 d8", 4, K.Other], // mov cr11: REX.R makes it no MOV to CR3
      [Bits64, "0f 04", 2, K.Other],
      [Bits64, "8f e9 78 c0 11", 2, K.Other], // XOP is POP r/m to libipt
      [Bits64, "c4 e4 78 10 c0 ff", 6, K.Other], // VEX map 4: the 3DNow! map
      [Bits32, "0f 0f c0 ff", 4, K.Other], // 3DNow! with an undefined suffix
      [Bits16, "8e c8", 2, K.Other], // mov cs, ax
    ]);
    assert.equal(decode(Bits64, "eb fe").target, 0n, "iced's answers stay where the lengths agree");
    assert.equal(decode(Bits64, "f0 e8 00 01 00 00", 0x1000n).target, 0x1106n, "a LOCK CALL's target");
    assert.equal(decode(Bits32, "f0 66 e9 80 00", 0x1234fff0n).target, 0x75n, "rel16 wraps to 16 bits");
  });

  test("BadInsn: 16 bytes of prefixes, a VEX map field of 5 or more", () => {
    for (const [mode, bytes] of [
      [Bits64, "26 26 26 26 26 26 26 26 26 26 26 26 26 26 26 90"], // 16 bytes
      [Bits64, "c4 e5 78 10 c0 00 00 00"],
      [Bits32, "c4 ff 78 10 c0 00 00 00"],
    ] as [ExecMode, string][]) {
      const d = decode(mode, bytes);
      assert.equal(d.status, BAD, `${bytes} in mode ${mode}`);
      assert.equal(d.length, 0);
      assert.equal(d.iclass, K.Other);
    }
  });

  test("the longest valid instruction is 15 bytes", () => {
    assert.equal(decode(Bits64, "26 26 26 26 26 26 26 26 26 26 26 26 26 26 90").status, 15);
  });

  test("truncated instructions are BadInsn, and nothing past the end is read", () => {
    const full = hex("0f 84 10 00 00 00");
    for (let n = 0; n < full.length; n++) {
      assert.equal(decode(Bits64, full.subarray(0, n)).status, BAD, `first ${n} bytes`);
    }
    assert.equal(decode(Bits64, full).status, 6);
    for (const bytes of ["e8 00", "0f", "c2 08", "48", "66", "c4 e2", "62 f1 7c 48", "f3 0f ae"]) {
      assert.equal(decode(Bits64, bytes).status, BAD, bytes);
    }
    // At an offset: the end of the buffer still bounds the instruction.
    const buf = hex("90 90 90 0f 84 10 00");
    assert.equal(decode(Bits64, buf, 0n, 2).status, 1);
    assert.equal(decode(Bits64, buf, 0n, 3).status, BAD);
    assert.equal(decode(Bits64, buf, 0n, buf.length).status, BAD);
    assert.equal(decode(Bits64, buf, 0n, buf.length + 5).status, BAD);
  });

  test("bad arguments are Invalid, and clear the record", () => {
    const out = new InsnInfo();
    out.length = 7;
    const b = hex("90");
    assert.equal(decodeInsn(b, 0, 0, 0, ExecMode.Unknown, out), -ErrorCode.Invalid);
    assert.equal(out.length, 0);
    assert.equal(decodeInsn(b, 0, 0, 0, 7 as ExecMode, out), -ErrorCode.Invalid);
    assert.equal(decodeInsn(b, -1, 0, 0, Bits64, out), -ErrorCode.Invalid);
    assert.equal(decodeInsn(b, 0.5, 0, 0, Bits64, out), -ErrorCode.Invalid);
    assert.equal(decodeInsn(b, Number.NaN, 0, 0, Bits64, out), -ErrorCode.Invalid);
  });

  test("decoding at an offset reads the bytes there", () => {
    const buf = hex("90 e8 00 00 00 00 c3");
    assert.equal(decode(Bits64, buf, 0x1001n, 1).target, 0x1006n);
    assert.equal(decode(Bits64, buf, 0x1006n, 6).iclass, K.Return);
  });
});

describe("formatting", () => {
  const fmt = (mode: ExecMode, bytes: string, ip: bigint, syntax?: "intel" | "att") =>
    formatInsn(hex(bytes), 0, Number(ip >> 32n), Number(ip & 0xffffffffn), mode, syntax);

  test("Intel and AT&T syntax, with resolved targets", () => {
    assert.equal(fmt(Bits64, "48 89 5c 24 10", 0n), "mov [rsp+0x10], rbx");
    assert.equal(fmt(Bits64, "48 89 5c 24 10", 0n, "att"), "mov %rbx,0x10(%rsp)");
    assert.equal(fmt(Bits64, "e8 00 00 00 00", 0x401000n), "call 0x401005");
    assert.equal(fmt(Bits64, "0f 84 10 00 00 00", 0xffff_ffff_8100_0000n), "je 0xffffffff81000016");
    assert.equal(fmt(Bits64, "ff 25 10 00 00 00", 0x1000n), "jmp qword ptr [0x1016]");
    assert.equal(fmt(Bits64, "ff 25 10 00 00 00", 0x1000n, "att"), "jmpq *0x1016");
    assert.equal(fmt(Bits64, "c3", 0n), "ret");
    assert.equal(fmt(Bits64, "0f 22 d8", 0n), "mov cr3, rax");
    assert.equal(fmt(Bits64, "f3 0f ae e0", 0n), "ptwrite eax");
    assert.equal(fmt(Bits16, "eb 20", 0xfff0n), "jmp 0x12");
    assert.equal(fmt(Bits32, "cd 80", 0n, "att"), "int $0x80");
  });

  test("bad bytes and arguments format as (bad)", () => {
    assert.equal(fmt(Bits64, "06", 0n), "(bad)");
    assert.equal(fmt(Bits64, "0f 84 10", 0n), "(bad)");
    assert.equal(fmt(ExecMode.Unknown, "90", 0n), "(bad)");
    assert.equal(formatInsn(hex("90"), 1, 0, 0, Bits64), "(bad)");
  });
});

test("execModeFromCs follows MODE.Exec's CS.L and CS.D", () => {
  assert.equal(execModeFromCs(false, false), ExecMode.Bits16);
  assert.equal(execModeFromCs(false, true), ExecMode.Bits32);
  assert.equal(execModeFromCs(true, false), ExecMode.Bits64);
  assert.equal(execModeFromCs(true, true), ExecMode.Unknown);
});

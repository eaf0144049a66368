/**
 * Lackey logs to executions: classification from code bytes, branch outcomes, the
 * stand-in kernel for system calls and signals, faults, REP iterations, lost lines,
 * malformed input and chunking. The logs here are written by hand in lackey's format
 * over a small piece of hand-assembled code.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { decodeInsn, ExecMode, INSN_CLASS_NAMES, InsnClass, InsnInfo } from "../../../src/isa/index.js";
import {
  convertLackey,
  DEFAULT_CR3,
  LackeyConverter,
  type LackeyOptions,
} from "../../../src/unit/exec/lackey.js";
import { IRET_OFFSET, KERNEL_BASE_LO, KERNEL_CODE } from "../../../src/unit/exec/lackey-kernel.js";
import { LackeyLogScanner, MAX_LINE } from "../../../src/unit/exec/lackey-log.js";
import { EXEC_EVENT_NAMES, type Execution, infoClass, infoSize } from "../../../src/unit/exec/types.js";

const BASE = 0x400000;
/** The code under test, at BASE. */
const CODE = Uint8Array.from([
  0x48,
  0x89,
  0xc3, //             400000 mov rbx, rax
  0x75,
  0x05, //                   400003 jne 0x40000a
  0xf3,
  0xa4, //                   400005 rep movsb
  0x0f,
  0x05, //                   400007 syscall
  0x90, //                         400009 nop
  0xe8,
  0x00,
  0x00,
  0x00,
  0x00, // 40000a call 0x40000f (zero-length)
  0xff,
  0xd0, //                   40000f call rax
  0xc3, //                         400011 ret
  0x0f,
  0x0b, //                   400012 ud2
  0x90,
  0x90,
  0x90,
  0x90, //       400014 nop x4
  0xeb,
  0xe6, //                   400018 jmp 0x400000
]);

/** Code at BASE, nothing elsewhere; reads cut at the end like an image's. */
const code: LackeyOptions["code"] = {
  read(ipHi, ipLo, out, size) {
    const at = ipLo - BASE;
    if (ipHi !== 0 || at < 0 || at >= CODE.length) return -13;
    const n = Math.min(size, CODE.length - at);
    out.set(CODE.subarray(at, at + n));
    return n;
  },
};

const KSYSRET = "ffffffff81000000";
const KIRET = "ffffffff81000010";

/** The execution as lines: "insn <ip> <size> <class>[ zlc]", "<event> <fields>". */
function records(exe: Execution): string[] {
  const out: string[] = [];
  const ip = (hi: number, lo: number) =>
    hi ? hi.toString(16) + lo.toString(16).padStart(8, "0") : lo.toString(16);
  let e = 0;
  for (let i = 0; i <= exe.insnCount; i++) {
    for (; e < exe.eventCount && exe.evAt[e] === i; e++) {
      const name = EXEC_EVENT_NAMES[exe.evKind[e]!]!;
      const a = exe.evA[e]!;
      const v = ip(exe.evHi[e]!, exe.evLo[e]!);
      const to = ip(exe.evToHi[e]!, exe.evToLo[e]!);
      if (name === "cpl") out.push(`cpl ${a}`);
      else if (name === "cr3" || name === "end") out.push(`${name} ${v}`);
      else out.push(`${name} ${a} ${v} ${to}`);
    }
    if (i === exe.insnCount) break;
    const info = exe.info[i]!;
    const zlc = info & (1 << 9) ? " zlc" : "";
    out.push(
      `insn ${ip(exe.ipHi[i]!, exe.ipLo[i]!)} ${infoSize(info)} ${INSN_CLASS_NAMES[infoClass(info)]}${zlc}`,
    );
  }
  return out;
}

const log = (...lines: string[]) => new TextEncoder().encode(`${lines.join("\n")}\n`);
const I = (ip: number, size: number) => `I  ${ip.toString(16).padStart(8, "0")},${size}`;
const START = ["cpl 3", `cr3 ${DEFAULT_CR3.toString(16)}`];

describe("lackey conversion", () => {
  test("classifies instructions and keeps branch outcomes implicit in the IPs", () => {
    const r = convertLackey(
      log(I(0x400000, 3), " S 1fff000778,8", I(0x400003, 2), I(0x40000a, 5), I(0x40000f, 2), I(0x400011, 1)),
      { code },
    );
    assert.equal(r.fatal, undefined);
    assert.deepEqual(records(r.execution), [
      ...START,
      "insn 400000 3 other",
      "insn 400003 2 cond-branch",
      "insn 40000a 5 call zlc",
      "insn 40000f 2 call-indirect",
      "insn 400011 1 return",
    ]);
    assert.equal(r.stats.insns, 5);
    assert.equal(r.stats.insnLines, 5);
    assert.equal(r.stats.lines, 6);
  });

  test("merges REP iterations into one instruction", () => {
    const r = convertLackey(log(I(0x400005, 2), I(0x400005, 2), I(0x400005, 2), I(0x400007, 2)), { code });
    assert.deepEqual(records(r.execution).slice(2, 3), ["insn 400005 2 other"]);
    assert.equal(r.stats.repIterations, 2);
  });

  test("a system call visits the kernel: SYSRETQ back to the next instruction", () => {
    const r = convertLackey(log(I(0x400007, 2), I(0x400009, 1)), { code });
    assert.deepEqual(records(r.execution), [
      ...START,
      "insn 400007 2 syscall",
      "cpl 0",
      `insn ${KSYSRET} 3 sysret`,
      "cpl 3",
      "insn 400009 1 other",
    ]);
    assert.equal(r.stats.syscalls, 1);
    assert.equal(r.stats.kernelEntries, 1);
  });

  test("a system call that returns elsewhere (signal, sigreturn) leaves by IRETQ", () => {
    const r = convertLackey(
      log(
        I(0x400007, 2),
        "--1-- push_signal_frame (thread 1): signal 10",
        "==1==    at 0x400009: main",
        I(0x400014, 1),
      ),
      { code },
    );
    assert.deepEqual(records(r.execution).slice(2), [
      "insn 400007 2 syscall",
      "cpl 0",
      `insn ${KIRET} 2 iret`,
      "cpl 3",
      "insn 400014 1 other",
    ]);
    assert.equal(r.stats.signals, 1);
  });

  test("the last system call ends in the kernel", () => {
    const r = convertLackey(log(I(0x400009, 1), I(0x40000a, 5), I(0x40000f, 2), I(0x400007, 2)), { code });
    assert.deepEqual(records(r.execution).slice(-3), ["insn 400007 2 syscall", "cpl 0", `end ${KSYSRET}`]);
  });

  test("an asynchronous signal is an interrupt where execution resumes", () => {
    const r = convertLackey(
      log(
        I(0x400003, 2),
        "--1-- push_signal_frame (thread 1): signal 14",
        "==1==    at 0x40000A: main (in /x)",
        "==1==    by 0x400000: main (in /x)",
        I(0x400014, 1),
      ),
      { code },
    );
    assert.deepEqual(records(r.execution).slice(2), [
      "insn 400003 2 cond-branch",
      `interrupt 32 40000a ${KIRET}`,
      "cpl 0",
      `insn ${KIRET} 2 iret`,
      "cpl 3",
      "insn 400014 1 other",
    ]);
  });

  test("a faulting instruction does not retire: an exception in its place", () => {
    const r = convertLackey(
      log(
        I(0x400000, 3),
        "--1-- push_signal_frame (thread 1): signal 11",
        "==1==    at 0x400000: f",
        I(0x400014, 1),
      ),
      { code },
    );
    assert.deepEqual(records(r.execution).slice(2), [
      `exception 14 400000 ${KIRET}`,
      "cpl 0",
      `insn ${KIRET} 2 iret`,
      "cpl 3",
      "insn 400014 1 other",
    ]);
    assert.equal(r.stats.faults, 1);
    assert.equal(r.stats.insns, 1);
  });

  test("instructions lackey lost before a fault are decoded back in", () => {
    // Logged: the nop at 400014; lost: 400015, 400016; faulting: 400017.
    const r = convertLackey(
      log(
        I(0x400014, 1),
        "--1-- push_signal_frame (thread 1): signal 11",
        "==1==    at 0x400017: f",
        I(0x400000, 3),
      ),
      { code },
    );
    assert.deepEqual(records(r.execution).slice(2, 6), [
      "insn 400014 1 other",
      "insn 400015 1 other",
      "insn 400016 1 other",
      `exception 14 400017 ${KIRET}`,
    ]);
    assert.equal(r.stats.recovered, 2);
  });

  test("lost lines after a conditional branch are recovered along the path that reaches the fault", () => {
    // jne at 400003 not taken, rep movsb at 400005 lost, the fault at 400007.
    const r = convertLackey(
      log(
        I(0x400003, 2),
        "--1-- push_signal_frame (thread 1): signal 11",
        "==1==    at 0x400007: f",
        I(0x400014, 1),
      ),
      { code },
    );
    assert.deepEqual(records(r.execution).slice(2, 5), [
      "insn 400003 2 cond-branch",
      "insn 400005 2 other",
      `exception 14 400007 ${KIRET}`,
    ]);
    assert.equal(r.stats.recovered, 1);
  });

  test("a signal resuming where nothing leads is reported and taken at the fall-through", () => {
    const r = convertLackey(
      log(
        I(0x400000, 3),
        "--1-- push_signal_frame (thread 1): signal 10",
        "==1==    at 0x400014: f",
        I(0x400015, 1),
      ),
      { code },
    );
    assert.deepEqual(records(r.execution).slice(2, 4), [
      "insn 400000 3 other",
      `interrupt 32 400003 ${KIRET}`,
    ]);
    assert.equal(r.stats.guessed, 1);
    assert.match(
      r.issues[0]!.message,
      /signal 10 resumes at 0x400014, where the instruction at line 1 cannot go/,
    );
  });

  test("UD2 raises #UD instead of retiring", () => {
    const r = convertLackey(log(I(0x400012, 2), I(0x400000, 3)), { code });
    assert.deepEqual(records(r.execution).slice(2, 4), [`exception 6 400012 ${KIRET}`, "cpl 0"]);
    assert.equal(r.stats.faults, 1);
  });

  test("a jump nothing explains is guessed to be an interrupt, and reported", () => {
    const r = convertLackey(log(I(0x400000, 3), I(0x400014, 1)), { code });
    assert.deepEqual(records(r.execution).slice(2, 4), [
      "insn 400000 3 other",
      `interrupt 32 400003 ${KIRET}`,
    ]);
    assert.equal(r.stats.guessed, 1);
    assert.equal(r.issues.length, 1);
    assert.deepEqual({ line: r.issues[0]!.line, offset: r.issues[0]!.offset }, { line: 2, offset: 14 });
    assert.match(r.issues[0]!.message, /400014 cannot follow the instruction at line 1/);
  });

  test("a direct jump to the wrong place is guessed to be an interrupt at its target", () => {
    const r = convertLackey(log(I(0x400018, 2), I(0x400014, 1)), { code });
    assert.deepEqual(records(r.execution).slice(2, 4), [
      "insn 400018 2 jump",
      `interrupt 32 400000 ${KIRET}`,
    ]);
  });

  test("stops at code that is not mapped, keeping what came before", () => {
    const r = convertLackey(log(I(0x400000, 3), I(0x400003, 2), I(0x500000, 2), I(0x400000, 3)), { code });
    assert.ok(r.fatal);
    assert.equal(r.fatal.line, 3);
    assert.equal(r.fatal.offset, 28);
    assert.match(r.fatal.message, /no code is mapped at 0x500000/);
    assert.equal(r.execution.insnCount, 2);
  });

  test("stops when the log's size disagrees with the code", () => {
    const r = convertLackey(log(I(0x400000, 5)), { code });
    assert.match(r.fatal?.message ?? "", /0x400000 is 3 bytes long, but the log says 5 bytes/);
    assert.equal(r.execution.insnCount, 0);
  });

  test("reports malformed instruction lines and goes on", () => {
    const r = convertLackey(log("I  zz,3", I(0x400000, 3), "I  400003,", "I  400003,2x", I(0x400003, 2)), {
      code,
    });
    assert.equal(r.fatal, undefined);
    assert.deepEqual(
      r.issues.map((i) => i.line),
      [1, 3, 4],
    );
    assert.equal(r.execution.insnCount, 2);
  });

  test("reports load biases of mapped objects (from their first code segment), modulo 2^64", () => {
    const seen: [string, bigint][] = [];
    convertLackey(
      log(
        "--7-- Reading syms from /lib/libc.so.6",
        "--7--   Considering /usr/lib/debug/x.debug ..",
        "--7--    svma 0x0000026380, avma 0x000486b380",
        "--7--    svma 0x0000090000, avma 0x0000990000",
        "--7-- Reading syms from /odd",
        "--7--    svma 0x0000002000, avma 0x0000001000",
      ),
      { code, onObject: (path, bias) => seen.push([path, bias]) },
    );
    assert.deepEqual(seen, [
      ["/lib/libc.so.6", 0x4845000n],
      ["/odd", 0xfffffffffffff000n],
    ]);
  });

  test("gives the same execution whatever the chunking", () => {
    const text = log(
      "--1-- Reading syms from /x",
      "--1--    svma 0x0000001000, avma 0x0000001000",
      I(0x400000, 3),
      I(0x400003, 2),
      I(0x400005, 2),
      I(0x400005, 2),
      I(0x400007, 2),
      "--1-- push_signal_frame (thread 1): signal 10",
      "==1==    at 0x400009: main",
      I(0x400014, 1),
      I(0x400015, 1),
    );
    const whole = convertLackey(text, { code, onObject: () => {} });
    for (const size of [1, 2, 3, 7, 64]) {
      const objects: string[] = [];
      const parts: Uint8Array[] = [];
      for (let i = 0; i < text.length; i += size) parts.push(text.subarray(i, i + size));
      const c = new LackeyConverter({ code, onObject: (p) => objects.push(p) });
      for (const p of parts) c.push(p);
      const r = c.finish();
      assert.deepEqual(records(r.execution), records(whole.execution), `chunks of ${size}`);
      assert.deepEqual(r.stats, whole.stats);
      assert.deepEqual(objects, ["/x"]);
    }
  });

  test("a last line without a newline counts", () => {
    const r = convertLackey(new TextEncoder().encode(`${I(0x400000, 3)}\n${I(0x400003, 2)}`), { code });
    assert.equal(r.execution.insnCount, 2);
  });

  test("the kernel's code decodes to the instructions the execution names", () => {
    const info = new InsnInfo();
    assert.equal(decodeInsn(KERNEL_CODE, 0, 0xffffffff, KERNEL_BASE_LO, ExecMode.Bits64, info), 3);
    assert.equal(info.iclass, InsnClass.Sysret);
    assert.equal(
      decodeInsn(KERNEL_CODE, IRET_OFFSET, 0xffffffff, KERNEL_BASE_LO + IRET_OFFSET, ExecMode.Bits64, info),
      2,
    );
    assert.equal(info.iclass, InsnClass.Iret);
  });
});

describe("lackey conversion of hostile logs", () => {
  const fragments = [
    I(0x400000, 3),
    I(0x400003, 2),
    I(0x400005, 2),
    I(0x400007, 2),
    I(0x400012, 2),
    I(0x400018, 2),
    I(0x400014, 1),
    "I  ",
    "I  4000",
    "I  400000,",
    "I  ffffffffffffffffff,3",
    " S 1fff000778,8",
    "--1-- push_signal_frame (thread 1): signal 11",
    "--1-- push_signal_frame (thread 1): signal 99999",
    "==1==    at 0x400000: f",
    "==1==    at 0xffffffffffffffff: f",
    "--1-- Reading syms from /x",
    "--1--    svma 0x0000001000, avma 0x0000000000",
    "\r",
    "",
  ];
  test("never throw, stay within their issue limit, and give executions the builder accepts", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom(...fragments), fc.string({ maxLength: 30 })), { maxLength: 60 }),
        fc.integer({ min: 1, max: 64 }),
        (lines, chunk) => {
          const bytes = new TextEncoder().encode(lines.join("\n"));
          const c = new LackeyConverter({ code, maxIssues: 5 });
          for (let i = 0; i < bytes.length; i += chunk) c.push(bytes.subarray(i, i + chunk));
          const r = c.finish();
          assert.ok(r.issues.length <= 5);
          assert.ok(r.stats.issues >= r.issues.length);
          assert.ok(r.execution.insnCount <= r.stats.insnLines + r.stats.recovered + r.stats.kernelEntries);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("lackey data pages", () => {
  test("dataPages: the first load and the first store of each page, with the instruction that made it", () => {
    const text = log(
      I(0x400000, 3),
      " L 00601ff8,16", // crosses into page 0x602: a load on each page
      I(0x400003, 2), // jne, not taken
      I(0x400005, 2), // rep movsb
      " L 00601000,1", // page 0x601 loaded before
      " S 00603000,1",
      I(0x400005, 2), // the next iteration: the same instruction
      " S 00603001,1",
      " M 00604000,8", // modify: a store
      I(0x400007, 2), // syscall: the kernel's SYSRETQ is instruction 4
      I(0x400009, 1),
      " L 00603000,4", // the first load on a page stored to before
      " S 00601000,8",
      " L zz,4",
      I(0x40000a, 5),
    );
    const r = convertLackey(text, { code, dataPages: true });
    assert.equal(r.fatal, undefined);
    assert.deepEqual(r.dataTouches, {
      insn: [0, 0, 2, 2, 5, 5],
      page: [0x601, 0x602, 0x603, 0x604, 0x603, 0x601],
      write: [0, 0, 1, 1, 0, 1],
    });
    assert.deepEqual(
      r.issues.map((i) => [i.line, i.message]),
      [[14, "expected 'L <hex address>,<size>'"]],
    );
    // The execution is the same with or without them; without, no touches are kept.
    const plain = convertLackey(text, { code });
    assert.equal(plain.dataTouches, undefined);
    assert.deepEqual(records(plain.execution), records(r.execution));
    assert.equal(plain.issues.length, 0);
  });

  test("the touches of an instruction that did not retire go with the next one; at the end they are dropped", () => {
    const r = convertLackey(
      log(
        I(0x400009, 1),
        " S 00700000,8",
        "--1-- push_signal_frame (thread 1): signal 11",
        "==1==    at 0x400009: ???",
        I(0x400009, 1),
        " S 00701000,8",
        I(0x40000a, 5),
        " L 00702000,8",
        I(0x400012, 2), // ud2 at the end: #UD, never retires
        " L 00703000,4",
      ),
      { code, dataPages: true },
    );
    // Instruction 0 is the kernel's IRETQ after the fault; the NOP retires as 1.
    assert.deepEqual(r.dataTouches, { insn: [1, 1, 2], page: [0x700, 0x701, 0x702], write: [1, 1, 0] });
  });
});

describe("lackey log scanner", () => {
  test("skips over-long lines, counting them, and keeps offsets right", () => {
    const seen: number[] = [];
    const scanner = new LackeyLogScanner({
      insn: (_hi, lo, _size, pos) => seen.push(lo, pos.line, pos.offset),
      object: () => {},
      signal: () => {},
      malformed: () => assert.fail("nothing is malformed"),
    });
    const long = `I  ${"0".repeat(MAX_LINE + 10)}`;
    const text = new TextEncoder().encode(`${long}\nI  400000,3\n`);
    for (let i = 0; i < text.length; i += 1000) scanner.push(text.subarray(i, i + 1000));
    scanner.end();
    assert.equal(scanner.longLines, 1);
    assert.deepEqual(seen, [0x400000, 2, long.length + 1]);
  });

  test("reads 64-bit addresses exactly", () => {
    const seen: number[] = [];
    const scanner = new LackeyLogScanner({
      insn: (hi, lo) => seen.push(hi, lo),
      object: () => {},
      signal: () => {},
      malformed: (reason) => seen.push(-1, reason.length),
    });
    scanner.push(new TextEncoder().encode("I  ffffffff81000010,2\nI  1ffffffff81000010,2\n"));
    assert.deepEqual(seen.slice(0, 3), [0xffffffff, 0x81000010, -1]);
  });
});

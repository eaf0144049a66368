/**
 * Random x86-64 programs and random runs of them, for the end-to-end property test:
 * real machine code (so libipt's instruction decoder can walk it) and an execution
 * that is consistent with it (conditional branches go to their encoded targets,
 * returns mostly to their calls, system calls and interrupts through a small kernel).
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Image } from "../../../src/image/index.js";
import { InsnClass, InsnFlag } from "../../../src/isa/types.js";
import { ExecBuilder, ExecEvent, type Execution } from "../../../src/unit/exec/types.js";
import { generate } from "../../../src/unit/gen/index.js";
import { rng } from "../output/helpers.js";
import { type CtlFields, msrs } from "./helpers.js";

export const USER_BASE = 0x400000;
export const KERNEL_HI = 0xffffffff;
export const KERNEL_LO = 0x81000000;
export const CR3 = 0x1000;

/**
 * Random program `seed` (60 functions) run for 4,000 instructions (interrupts, wild
 * returns) and traced as a Skylake traces with `ctl` (`overflow`: through a small
 * internal buffer that overflows), its files written into a new directory under
 * `parent` (see {@link writeProgramFiles}): the directory, the `--raw` arguments, and
 * how many overflows the trace has.
 */
export function tracedProgram(
  parent: string,
  seed: number,
  ctl: CtlFields,
  overflow: boolean,
): { cwd: string; raw: string[]; overflows: number } {
  const program = randomProgram(seed, 60);
  const exec = randomRun(program, seed, { insns: 4000, interrupts: 0.01, wildReturns: 0.02 });
  const res = generate(exec, {
    msrs: msrs({ preset: "skylake", caps: { ptwrite: false }, ctl }),
    ...(overflow ? { internalBuffer: { bytes: 64, drainPerCycle: 2 }, cyclesPerInsn: 0.3 } : {}),
  });
  const cwd = mkdtempSync(join(parent, "prog-"));
  return { cwd, raw: writeProgramFiles(cwd, program, res.bytes), overflows: res.overflows };
}

/**
 * Write a program's code, the kernel's and `trace` into `dir` (code.bin, kernel.bin,
 * trace.pt): the `--raw` arguments that load the two (relative to `dir`).
 */
export function writeProgramFiles(dir: string, program: Program, trace: Uint8Array): string[] {
  writeFileSync(join(dir, "code.bin"), program.code);
  writeFileSync(join(dir, "kernel.bin"), KERNEL_CODE);
  writeFileSync(join(dir, "trace.pt"), trace);
  const kernel = (BigInt(KERNEL_HI) << 32n) | BigInt(KERNEL_LO);
  return ["--raw", `code.bin:0x${USER_BASE.toString(16)}`, "--raw", `kernel.bin:0x${kernel.toString(16)}`];
}

/** The image of a program and the kernel, as {@link writeProgramFiles} maps their files. */
export function programImage(program: Program): Image {
  const image = new Image();
  image.addRaw("code", program.code, 0, USER_BASE);
  image.addRaw("kernel", KERNEL_CODE, KERNEL_HI, KERNEL_LO);
  return image;
}

/** Kernel code: a system call entry (nop, nop, sysretq) and an interrupt handler (nop, iretq). */
export const KERNEL_CODE = Uint8Array.from([
  0x90, 0x90, 0x48, 0x0f, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x90, 0x48, 0xcf,
]);
interface KernelInsn {
  off: number;
  size: number;
  cls: number;
}
const KERNEL: KernelInsn[] = [
  { off: 0x00, size: 1, cls: InsnClass.Other },
  { off: 0x01, size: 1, cls: InsnClass.Other },
  { off: 0x02, size: 3, cls: InsnClass.Sysret },
];
const HANDLER: KernelInsn[] = [
  { off: 0x10, size: 1, cls: InsnClass.Other },
  { off: 0x11, size: 2, cls: InsnClass.Iret },
];

type Kind = "other" | "jcc" | "jmp" | "call" | "zlc" | "jmpr" | "callr" | "ret" | "syscall" | "ptw";
const WEIGHTS: [Kind, number][] = [
  ["other", 36],
  ["jcc", 22],
  ["jmp", 4],
  ["call", 9],
  ["zlc", 2],
  ["jmpr", 5],
  ["callr", 5],
  ["ret", 12],
  ["syscall", 3],
  ["ptw", 2],
];
const SIZE: Record<Kind, number> = {
  other: 3,
  jcc: 6,
  jmp: 5,
  call: 5,
  zlc: 5,
  jmpr: 2,
  callr: 2,
  ret: 1,
  syscall: 2,
  ptw: 5,
};
const CLASS: Record<Kind, number> = {
  other: InsnClass.Other,
  jcc: InsnClass.CondBranch,
  jmp: InsnClass.Jump,
  call: InsnClass.Call,
  zlc: InsnClass.Call,
  jmpr: InsnClass.JumpIndirect,
  callr: InsnClass.CallIndirect,
  ret: InsnClass.Return,
  syscall: InsnClass.Syscall,
  ptw: InsnClass.PtWrite,
};

interface Slot {
  off: number;
  kind: Kind;
  /** Direct target slot (jcc, jmp, call). */
  target: number;
}

export interface Program {
  code: Uint8Array;
  slots: Slot[];
}

function pick(r: () => number): Kind {
  let x = r() * WEIGHTS.reduce((s, [, w]) => s + w, 0);
  for (const [k, w] of WEIGHTS) {
    x -= w;
    if (x < 0) return k;
  }
  return "other";
}

/**
 * `count` random instructions at {@link USER_BASE}; the last jumps back to the first
 * indirectly. Direct JMP and CALL go forward only, so every loop has a packet (a TNT
 * bit or a TIP): a loop of direct branches alone would repeat invisibly, and no
 * decoder could tell how often it ran before an interrupt.
 */
export function randomProgram(seed: number, count: number): Program {
  const r = rng(seed);
  const slots: Slot[] = [];
  let off = 0;
  for (let i = 0; i < count; i++) {
    let kind: Kind = i === count - 1 ? "jmpr" : pick(r);
    if ((kind === "jmp" || kind === "call") && i >= count - 2) kind = "other";
    const forward = kind === "jmp" || kind === "call";
    const target = forward ? i + 1 + Math.floor(r() * (count - i - 1)) : Math.floor(r() * count);
    // A call to the next instruction is a zero-length call, whatever made it.
    if (kind === "call" && target === i + 1) kind = "zlc";
    slots.push({ off, kind, target });
    off += SIZE[kind];
  }
  const code = new Uint8Array(off);
  const rel = (at: number, s: Slot) => {
    const v = slots[s.target]!.off - (s.off + SIZE[s.kind]);
    new DataView(code.buffer).setInt32(at, v, true);
  };
  for (const s of slots) {
    const o = s.off;
    switch (s.kind) {
      case "other":
        code.set([0x48, 0x89, 0xc3], o); // mov rbx, rax
        break;
      case "jcc":
        code.set([0x0f, 0x84], o); // je rel32
        rel(o + 2, s);
        break;
      case "jmp":
        code[o] = 0xe9;
        rel(o + 1, s);
        break;
      case "call":
        code[o] = 0xe8;
        rel(o + 1, s);
        break;
      case "zlc":
        code.set([0xe8, 0, 0, 0, 0], o); // call to the next instruction
        break;
      case "jmpr":
        code.set([0xff, 0xe0], o); // jmp rax
        break;
      case "callr":
        code.set([0xff, 0xd0], o); // call rax
        break;
      case "ret":
        code[o] = 0xc3;
        break;
      case "syscall":
        code.set([0x0f, 0x05], o);
        break;
      case "ptw":
        code.set([0xf3, 0x48, 0x0f, 0xae, 0xe0], o); // ptwrite rax
        break;
    }
  }
  return { code, slots };
}

export interface RunOptions {
  insns: number;
  /** Chance of an interrupt before each user instruction. */
  interrupts: number;
  /** Chance that a RET goes somewhere else than its call's next instruction. */
  wildReturns: number;
  /**
   * Event Trace material (none without it, so older runs stay as they were): a
   * chance that an event before a user instruction is a page fault (#PF, vector 14)
   * rather than an interrupt, a chance of an interrupt before each instruction of
   * the system call path (kernel code interrupted), and `if` records: the handler
   * runs with IF=0 (an interrupt gate), its IRET restores IF=1. Page faults come
   * with a `cr2` record (the faulting address).
   */
  events?: { faults: number; kernelInterrupts: number };
}

/** A run of `p` from its first instruction, at CPL 3. */
export function randomRun(p: Program, seed: number, o: RunOptions): Execution {
  const r = rng(seed ^ 0x5bd1e995);
  const b = new ExecBuilder().cr3(0, CR3).cpl(3);
  const slotAt = new Map(p.slots.map((s, i) => [s.off, i]));
  const stack: number[] = [];
  let i = 0;
  let n = 0;
  const ev = o.events;
  /** The interrupt handler entered at `hi:lo` (an interrupt gate: IF=0), returning with IF=1. */
  const handler = (kind: ExecEvent, vector: number, hi: number, lo: number, cpl: number) => {
    b.transfer(kind, vector, hi, lo, KERNEL_HI, KERNEL_LO + HANDLER[0]!.off);
    if (kind === ExecEvent.Exception) b.cr2(0, 0x600000 + (n & 0xfff));
    if (cpl !== 0) b.cpl(0);
    b.iflag(false);
    for (const k of HANDLER) {
      b.insn(KERNEL_HI, KERNEL_LO + k.off, k.size, k.cls);
      n++;
    }
    if (cpl !== 0) b.cpl(cpl);
    b.iflag(true);
  };
  const kernel = (steps: KernelInsn[]) => {
    b.cpl(0);
    for (const k of steps) {
      if (ev && steps === KERNEL && r() < ev.kernelInterrupts) {
        handler(ExecEvent.Interrupt, 33, KERNEL_HI, KERNEL_LO + k.off, 0);
      }
      b.insn(KERNEL_HI, KERNEL_LO + k.off, k.size, k.cls);
      n++;
    }
    b.cpl(3);
  };
  while (n < o.insns) {
    const s = p.slots[i]!;
    const ip = USER_BASE + s.off;
    if (r() < o.interrupts) {
      if (!ev) {
        b.transfer(ExecEvent.Interrupt, 32, 0, ip, KERNEL_HI, KERNEL_LO + HANDLER[0]!.off);
        kernel(HANDLER);
      } else if (r() < ev.faults) {
        handler(ExecEvent.Exception, 14, 0, ip, 3);
      } else {
        handler(ExecEvent.Interrupt, 32, 0, ip, 3);
      }
    }
    b.insn(0, ip, SIZE[s.kind], CLASS[s.kind], s.kind === "zlc" ? InsnFlag.ZeroLengthCall : 0);
    n++;
    const next = i + 1;
    const anywhere = () => Math.floor(r() * p.slots.length);
    switch (s.kind) {
      case "jcc":
        i = r() < 0.5 ? s.target : next;
        break;
      case "jmp":
        i = s.target;
        break;
      case "call":
        stack.push(next);
        i = s.target;
        break;
      case "zlc":
        // The return address is on the software stack, but not on the processor's.
        stack.push(next);
        i = next;
        break;
      case "callr":
        stack.push(next);
        i = anywhere();
        break;
      case "jmpr":
        i = next === p.slots.length ? 0 : anywhere();
        break;
      case "ret": {
        const back = stack.pop();
        i = back === undefined || r() < o.wildReturns ? anywhere() : back;
        break;
      }
      case "syscall":
        kernel(KERNEL);
        i = next;
        break;
      case "ptw":
        b.ptw(8, Math.floor(r() * 2 ** 32), Math.floor(r() * 2 ** 32));
        i = next;
        break;
      default:
        i = next;
    }
    if (slotAt.get(p.slots[i]!.off) !== i) throw new Error("internal: bad slot");
  }
  return b.end(0, USER_BASE + p.slots[i]!.off).build();
}

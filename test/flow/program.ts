/**
 * Random but valid programs and their traces, for property tests and the benchmark.
 *
 * A program is a few functions of random instructions (straight-line code,
 * conditional and direct jumps and calls, indirect calls and jumps, returns,
 * SYSCALL, PTWRITE, calls to the next instruction). Running it with random branch
 * outcomes gives the executed instructions (the ground truth) and the trace a
 * processor would write for them: TNT bits, TIPs, compressed returns against a
 * 64-entry stack as libipt models it, and at random places interrupts (FUP+TIP),
 * PSB+, overflows, tracing switched off and on, and TSX transactions.
 */

import { Rng } from "../../bench/prng.js";
import type { Image } from "../../src/image/index.js";
import { Trace } from "../event/helpers.js";
import { Asm } from "./asm.js";

export interface ProgramOptions {
  seed: number;
  /** Instructions to run before the trace ends. */
  steps: number;
  /** Per-instruction probability of each injected event (0 for none). */
  events?: number;
  /** Transactions among the injected events (default true). */
  tsx?: boolean;
  /** Code base address (default 0x400000). */
  base?: bigint;
  /**
   * Relative weights of plain instructions, jz, jmp, call, call-next, indirect call,
   * indirect jump, ret, syscall and ptwrite (default 40, 14, 5, 6, 1, 3, 2, 3, 1, 1).
   */
  weights?: readonly number[];
  /** Most functions and most instructions per function (default 10 and 40). */
  functions?: number;
  size?: number;
  /** Keep the ground truth (default true; off for long benchmark traces). */
  record?: boolean;
}

export interface Program {
  image: Image;
  trace: Uint8Array;
  /** The executed instructions, `? ` before speculative ones, and markers for events. */
  truth: string[];
  /** The instruction addresses alone. */
  ips: bigint[];
}

enum Op {
  Plain,
  Jz,
  Jmp,
  Call,
  CallNext,
  CallInd,
  JmpInd,
  Ret,
  Syscall,
  Ptwrite,
}

interface Insn {
  op: Op;
  /** Function and instruction index of a direct target. */
  fn: number;
  k: number;
}

interface Layout {
  fns: Insn[][];
  asm: Asm;
}

const lbl = (fn: number, k: number): string => `f${fn}_${k}`;

function generate(rng: Rng, options: ProgramOptions): Layout {
  const nfn = rng.range(2, options.functions ?? 10);
  const sizes = Array.from({ length: nfn }, () => rng.range(3, options.size ?? 40));
  const weights = options.weights ?? [40, 14, 5, 6, 1, 3, 2, 3, 1, 1];
  const fns: Insn[][] = sizes.map((size, fn) =>
    Array.from({ length: size }, (_, k): Insn => {
      if (k === size - 1) return { op: rng.chance(0.8) ? Op.Ret : Op.JmpInd, fn, k: 0 };
      const op = rng.pick(weights) as Op;
      if (op === Op.Jz) return { op, fn, k: rng.below(size) };
      // Direct jumps go forward and direct calls to later functions, so that every
      // loop passes a branch that needs trace (else the trace could not tell how often
      // it ran).
      if (op === Op.Jmp) return { op, fn, k: rng.range(k + 1, size - 1) };
      if (op === Op.Call && fn + 1 < nfn) return { op, fn: rng.range(fn + 1, nfn - 1), k: 0 };
      if (op === Op.Call) return { op: Op.Plain, fn, k: 0 };
      return { op, fn, k: 0 };
    }),
  );
  const asm = new Asm(options.base ?? 0x400000n);
  fns.forEach((insns, fn) => {
    insns.forEach((insn, k) => {
      asm.label(lbl(fn, k));
      switch (insn.op) {
        case Op.Plain: {
          const r = rng.below(3);
          if (r === 0) asm.nop();
          else if (r === 1) asm.add();
          else asm.load();
          break;
        }
        case Op.Jz:
          asm.jz(lbl(insn.fn, insn.k));
          break;
        case Op.Jmp:
          asm.jmp(lbl(insn.fn, insn.k));
          break;
        case Op.Call:
          asm.call(lbl(insn.fn, 0));
          break;
        case Op.CallNext:
          asm.callNext();
          break;
        case Op.CallInd:
          asm.callInd();
          break;
        case Op.JmpInd:
          asm.jmpInd();
          break;
        case Op.Ret:
          asm.ret();
          break;
        case Op.Syscall:
          asm.syscall();
          break;
        case Op.Ptwrite:
          asm.ptwrite();
          break;
      }
    });
  });
  asm.build();
  return { fns, asm };
}

/** The processor's RET-compression stack as libipt models it: 64 entries, oldest dropped. */
class CompressionStack {
  private readonly stack: bigint[] = [];
  push(ip: bigint): void {
    this.stack.push(ip);
    if (this.stack.length > 64) this.stack.shift();
  }
  top(): bigint | undefined {
    return this.stack[this.stack.length - 1];
  }
  pop(): void {
    this.stack.pop();
  }
}

/** Generate a program and run it. */
export function makeProgram(options: ProgramOptions): Program {
  const rng = new Rng(options.seed);
  const { fns, asm } = generate(rng, options);
  const record = options.record ?? true;
  const p = options.events ?? 0;
  const t = new Trace();
  const truth: string[] = [];
  const ips: bigint[] = [];
  let tnt = "";
  let tntMax = rng.chance(0.5) ? 6 : 47;
  const flush = (): void => {
    if (tnt.length > 0) t.tnt(tnt);
    tnt = "";
    tntMax = rng.chance(0.5) ? 6 : 47;
  };
  const bit = (taken: boolean): void => {
    tnt += taken ? "!" : ".";
    if (tnt.length === tntMax) flush();
  };
  const addrs = fns.map((insns, f) => insns.map((_, i) => asm.at(lbl(f, i))));
  const addr = (fn: number, k: number): bigint => addrs[fn]![k]!;
  const randomFn = (): number => rng.below(fns.length);
  const randomLabel = (): [number, number] => {
    const fn = randomFn();
    return [fn, rng.below(fns[fn]!.length)];
  };

  let fn = 0;
  let k = 0;
  const calls: [number, number][] = [];
  const compression = new CompressionStack();
  let speculative = false;
  /** The last instruction's trace was a TIP (nothing ran since the last packet). */
  let afterTip = false;
  const at = (): bigint => addr(fn, k);

  t.psb().mode(64).fup(at()).psbend();
  for (let step = 0; ; step++) {
    const insn = fns[fn]![k]!;
    const ending = step >= options.steps;
    const decision =
      insn.op === Op.Jz ||
      insn.op === Op.CallInd ||
      insn.op === Op.JmpInd ||
      insn.op === Op.Ret ||
      insn.op === Op.Syscall;
    if (ending && decision) {
      // Tracing ends at this branch: it still runs, its trace is the disable.
      ips.push(at());
      truth.push(`${speculative ? "? " : ""}0x${at().toString(16)}`);
      flush();
      t.pgd();
      truth.push("[disabled]");
      break;
    }
    if (!ending && p > 0 && step > 0) {
      const r = rng.float();
      if (r < p) {
        // An interrupt before this instruction.
        flush();
        const [tf, tk] = randomLabel();
        t.fup(at()).tip(addr(tf, tk));
        truth.push("[async-branch]");
        fn = tf;
        k = tk;
        afterTip = true;
        continue;
      }
      if (r < 2 * p) {
        flush();
        t.psb().mode(64);
        if (speculative) t.tsx(true);
        t.fup(at()).psbend();
      } else if (r < 3 * p && afterTip) {
        // An overflow loses what ran since the last packet: only right after a TIP can
        // the decoders know everything that ran before it.
        flush();
        const [tf, tk] = randomLabel();
        t.ovf();
        // The overflow resets IP compression, as PSB does.
        t.enc.last.reset();
        t.fup(addr(tf, tk));
        truth.push("[overflow]");
        fn = tf;
        k = tk;
        speculative = false;
        afterTip = true;
        continue;
      } else if (r < 4 * p && options.tsx !== false) {
        flush();
        speculative = !speculative;
        t.tsx(speculative).fup(at());
        truth.push("[tsx]");
      }
    }
    if (record) {
      ips.push(at());
      truth.push(`${speculative ? "? " : ""}0x${at().toString(16)}`);
    }
    afterTip =
      insn.op === Op.CallInd || insn.op === Op.JmpInd || insn.op === Op.Syscall || insn.op === Op.Ret;
    const next = (): void => {
      k += 1;
    };
    switch (insn.op) {
      case Op.Plain:
      case Op.Ptwrite:
        next();
        break;
      case Op.Jz: {
        const taken = rng.chance(0.5);
        bit(taken);
        if (taken) k = insn.k;
        else next();
        break;
      }
      case Op.Jmp:
        k = insn.k;
        break;
      case Op.Call:
        calls.push([fn, k + 1]);
        compression.push(addr(fn, k + 1));
        fn = insn.fn;
        k = 0;
        break;
      case Op.CallNext:
        calls.push([fn, k + 1]);
        next();
        break;
      case Op.CallInd:
      case Op.Syscall:
      case Op.JmpInd: {
        const [tf, tk] = insn.op === Op.JmpInd ? randomLabel() : [randomFn(), 0];
        if (insn.op === Op.CallInd) {
          calls.push([fn, k + 1]);
          compression.push(addr(fn, k + 1));
        }
        flush();
        if (p > 0 && rng.chance(p)) {
          // Tracing goes off at the branch and comes back on somewhere. (Without IP:
          // with one, the decoders stop at its first occurrence, which may come earlier.)
          const [ef, ek] = randomLabel();
          t.pgd().pge(addr(ef, ek));
          truth.push("[disabled]", "[enabled]");
          fn = ef;
          k = ek;
          break;
        }
        t.tip(addr(tf, tk));
        fn = tf;
        k = tk;
        break;
      }
      case Op.Ret: {
        const back = calls.pop() ?? [randomFn(), 0];
        const target = addr(back[0], back[1]);
        if (compression.top() === target && rng.chance(0.9)) {
          compression.pop();
          bit(true);
          afterTip = false;
        } else {
          flush();
          t.tip(target);
          afterTip = true;
        }
        [fn, k] = back;
        break;
      }
    }
  }
  return { image: asm.image(), trace: t.bytes(), truth, ips };
}

/**
 * The large-footprint workload's program: several megabytes of real x86-64 machine
 * code in four images, a main program, two shared libraries and a kernel, made of
 * basic blocks (a few straight-line instructions and one branch each), deterministic
 * from a seed. bench/large-run.ts walks it into executions; bench/large-workload.ts
 * writes the images as ELF files and traces the walks.
 *
 * Blocks end in a conditional branch (rel32, to any block of the same image, so loops
 * exist and each turn leaves a TNT bit), a direct JMP or CALL (rel32, forward only: a
 * loop of direct branches alone would leave no packet, and no decoder could tell how
 * often it ran before an interrupt), an indirect JMP or CALL (to any block of any user
 * image, or of the kernel in the kernel: the calls between images go this way, as
 * through a PLT), a RET, a SYSCALL (user images) or a SYSRET or IRETQ (the kernel's
 * ways out). The last block of each image is an indirect JMP, so that every block
 * before it has a next block to fall through or return to.
 *
 * With `functionBlocks` (the perf.data workload's function symbols, one every so many
 * blocks), calls go where compiled code's calls go, to functions' first blocks:
 * a direct CALL to one of the functions after it, an indirect one (bench/large-run.ts)
 * to any. Without it they go to any block, as the libipt and libxdc workloads were
 * made (a call into the middle of a function names a frame `f+0x…` of its own: 180k
 * of them in 5 M instructions, where a real program's calls reach its functions).
 */
import { Rng } from "./prng.js";

/** How a block ends. */
export const Term = {
  Jcc: 0,
  Jmp: 1,
  Call: 2,
  JmpInd: 3,
  CallInd: 4,
  Ret: 5,
  Syscall: 6,
  Sysret: 7,
  Iret: 8,
} as const;
export type Term = (typeof Term)[keyof typeof Term];
const TERM_COUNT = 9;

/** Bytes of each terminator: jcc rel32, jmp rel32, call rel32, jmp rax, call rax, ret, syscall, sysretq, iretq. */
export const TERM_SIZE: readonly number[] = [6, 5, 5, 2, 2, 1, 2, 3, 2];

/*
 * Terminator weights, user and kernel: about one block in six leaves a TIP (indirect
 * branches, returns the RET-compression stack cannot compress, far transfers), so
 * that with about four instructions a block there is a TIP every ~25 instructions.
 */
const USER_WEIGHTS = [46, 8, 13, 5, 6, 21, 1, 0, 0];
const KERNEL_WEIGHTS = [46, 8, 12, 3, 3, 14, 0, 4, 4];

/** Straight-line instructions (none of them a branch), in several lengths. */
const FILLERS: readonly (readonly number[])[] = [
  [0x90], // nop
  [0x48, 0x89, 0xc3], // mov rbx, rax
  [0x48, 0x83, 0xc0, 0x01], // add rax, 1
  [0x48, 0x8d, 0x44, 0x24, 0x08], // lea rax, [rsp+8]
  [0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00], // nop word [rax+rax]
  [0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00], // mov rax, [rip+0x10]
  [0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8], // movabs rax, imm64
];

/** One image: its code and its blocks, in flat arrays the walker reads without allocating. */
export interface LargeImage {
  /** File name of its ELF file. */
  name: string;
  kernel: boolean;
  /** Load address, as 32-bit halves. */
  baseHi: number;
  baseLo: number;
  code: Uint8Array;
  blocks: number;
  /** Offset of each block's first instruction in `code`. */
  start: Uint32Array;
  /** Block b's straight-line instructions are sizes[first[b]] .. sizes[first[b+1]-1]. */
  first: Uint32Array;
  sizes: Uint8Array;
  /** Each block's terminator ({@link Term}) and its direct target block (-1 if none). */
  term: Uint8Array;
  target: Int32Array;
}

export interface LargeProgram {
  /** In the layout's order: by default main, liba.so, libb.so, then the kernel (always last). */
  images: LargeImage[];
  blocks: number;
  codeBytes: number;
  /** Calls go to every this many blocks' first (a function's entry); 0: to any block. */
  functionBlocks: number;
}

/** One image of a program's layout: where it goes, its share of the code, its terminator weights. */
export interface ImageLayout {
  name: string;
  kernel: boolean;
  baseHi: number;
  baseLo: number;
  share: number;
  /** Weights of each {@link Term} (default: the user or kernel weights above). */
  weights?: readonly number[];
}

/** Where the images go: the kernel at 0xffffffff81000000, as on Linux without KASLR. */
const LAYOUT: readonly ImageLayout[] = [
  { name: "main", kernel: false, baseHi: 0, baseLo: 0x400000, share: 0.4 },
  { name: "liba.so", kernel: false, baseHi: 0x7f10, baseLo: 0, share: 0.2 },
  { name: "libb.so", kernel: false, baseHi: 0x7f20, baseLo: 0, share: 0.2 },
  { name: "vmlinux", kernel: true, baseHi: 0xffffffff, baseLo: 0x81000000, share: 0.2 },
];

/**
 * A program of at least `codeBytes` bytes of code, shared out among the images as
 * `layout` says (default: main, two libraries, the kernel, always last).
 */
export function largeProgram(
  seed: number,
  codeBytes: number,
  layout = LAYOUT,
  functionBlocks = 0,
): LargeProgram {
  const rng = new Rng(seed);
  const images = layout.map((l) =>
    makeImage(rng, l, Math.max(4096, Math.ceil(codeBytes * l.share)), functionBlocks),
  );
  return {
    images,
    blocks: images.reduce((s, i) => s + i.blocks, 0),
    codeBytes: images.reduce((s, i) => s + i.code.length, 0),
    functionBlocks,
  };
}

/**
 * A direct CALL's target from block `b` of `blocks`: a later function's first block
 * (every `functionBlocks` blocks), or with none later (or functionBlocks 0) any later block.
 */
function callTarget(rng: Rng, b: number, blocks: number, functionBlocks: number): number {
  if (functionBlocks > 0) {
    const next = Math.floor(b / functionBlocks) + 1;
    const later = Math.ceil(blocks / functionBlocks) - next;
    if (later > 0) return (next + rng.below(later)) * functionBlocks;
  }
  return b + 1 + rng.below(blocks - b - 1);
}

function makeImage(rng: Rng, l: ImageLayout, bytes: number, functionBlocks: number): LargeImage {
  const weights = l.weights ?? (l.kernel ? KERNEL_WEIGHTS : USER_WEIGHTS);
  // Lay the blocks out first (sizes and kinds), then write the code with the targets.
  const start: number[] = [];
  const first: number[] = [0];
  const sizes: number[] = [];
  const fill: number[] = [];
  const term: number[] = [];
  let off = 0;
  while (off < bytes) {
    start.push(off);
    const n = rng.range(1, 6);
    for (let i = 0; i < n; i++) {
      const f = rng.below(FILLERS.length);
      fill.push(f);
      sizes.push(FILLERS[f]!.length);
      off += FILLERS[f]!.length;
    }
    first.push(sizes.length);
    const t = rng.pick(weights);
    term.push(t);
    off += TERM_SIZE[t]!;
  }
  // The last block jumps away indirectly: no block after it to fall through or return to.
  const blocks = start.length;
  off -= TERM_SIZE[term[blocks - 1]!]!;
  term[blocks - 1] = Term.JmpInd;
  off += TERM_SIZE[Term.JmpInd]!;

  const code = new Uint8Array(off);
  const view = new DataView(code.buffer);
  const target = new Int32Array(blocks).fill(-1);
  for (let b = 0; b < blocks; b++) {
    let o = start[b]!;
    for (let i = first[b]!; i < first[b + 1]!; i++) {
      code.set(FILLERS[fill[i]!]!, o);
      o += sizes[i]!;
    }
    const t = term[b]!;
    const end = o + TERM_SIZE[t]!;
    // Jcc anywhere in the image; JMP and CALL forward only (the last block is a JmpInd).
    if (t === Term.Jcc) target[b] = rng.below(blocks);
    else if (t === Term.Jmp) target[b] = b + 1 + rng.below(blocks - b - 1);
    else if (t === Term.Call) target[b] = callTarget(rng, b, blocks, functionBlocks);
    const rel = target[b]! >= 0 ? start[target[b]!]! - end : 0;
    switch (t) {
      case Term.Jcc:
        code.set([0x0f, 0x80 | rng.below(16)], o); // jcc rel32, any condition
        view.setInt32(o + 2, rel, true);
        break;
      case Term.Jmp:
        code[o] = 0xe9;
        view.setInt32(o + 1, rel, true);
        break;
      case Term.Call:
        code[o] = 0xe8;
        view.setInt32(o + 1, rel, true);
        break;
      case Term.JmpInd:
        code.set([0xff, 0xe0], o); // jmp rax
        break;
      case Term.CallInd:
        code.set([0xff, 0xd0], o); // call rax
        break;
      case Term.Ret:
        code[o] = 0xc3;
        break;
      case Term.Syscall:
        code.set([0x0f, 0x05], o);
        break;
      case Term.Sysret:
        code.set([0x48, 0x0f, 0x07], o); // sysretq
        break;
      case Term.Iret:
        code.set([0x48, 0xcf], o); // iretq
        break;
    }
  }
  return {
    name: l.name,
    kernel: l.kernel,
    baseHi: l.baseHi,
    baseLo: l.baseLo,
    code,
    blocks,
    start: Uint32Array.from(start),
    first: Uint32Array.from(first),
    sizes: Uint8Array.from(sizes),
    term: Uint8Array.from(term),
    target: Int32Array.from(target),
  };
}

/** Blocks per terminator kind over the program (for the test and the report). */
export function termCounts(p: LargeProgram): number[] {
  const counts = new Array<number>(TERM_COUNT).fill(0);
  for (const img of p.images) for (const t of img.term) counts[t]!++;
  return counts;
}

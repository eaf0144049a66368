/**
 * Runs of the large-footprint program (bench/large-program.ts): executions consistent
 * with its code, cut into segments so that a run of hundreds of millions of
 * instructions never has to be in memory at once (each segment is traced on its own
 * and the traces are concatenated; every segment starts with a PSB+).
 *
 * User code runs at CPL 3; SYSCALL enters the kernel at its first block, an interrupt
 * (before about one user instruction in 3000) at its second; the kernel walks its own
 * blocks until a SYSRET or IRETQ takes it back to the instruction after the SYSCALL
 * or to the interrupted one. Conditional branches are taken half of the time, returns
 * go back to their calls (RET compression applies) unless the call is not known (then
 * anywhere, with a TIP; in a program with functions, user code's to main's first
 * block), indirect branches go anywhere (indirect calls, in a program with functions,
 * to a function's first block).
 */
import { InsnClass, InsnFlag } from "../src/isa/types.js";
import { ExecBuilder, ExecEvent, type Execution } from "../src/unit/exec/types.js";
import { type LargeProgram, TERM_SIZE, Term } from "./large-program.js";
import { Rng } from "./prng.js";

export const LARGE_CR3 = 0x1000;
const INTERRUPT_CHANCE = 1 / 3000;
/** The instruction class of each {@link Term}. */
export const TERM_CLASS: readonly number[] = [
  InsnClass.CondBranch,
  InsnClass.Jump,
  InsnClass.Call,
  InsnClass.JumpIndirect,
  InsnClass.CallIndirect,
  InsnClass.Return,
  InsnClass.Syscall,
  InsnClass.Sysret,
  InsnClass.Iret,
];
/** Blocks are numbered across images as image * BLOCK_SPAN + block (stack entries, positions). */
const BLOCK_SPAN = 0x1000000;

export class LargeRun {
  private readonly rng: Rng;
  private readonly kernel: number;
  private readonly userImages: number;
  /** Where the next instruction is: image, block, instruction within the block. */
  private img = 0;
  private blk = 0;
  private k = 0;
  private inKernel = false;
  /** Where the kernel goes back to (image * BLOCK_SPAN + block, and instruction). */
  private resume = 0;
  private resumeK = 0;
  private readonly userStack: number[] = [];
  private readonly kernelStack: number[] = [];
  /** Instructions so far, over all segments. */
  insns = 0;

  constructor(
    private readonly p: LargeProgram,
    seed: number,
  ) {
    this.rng = new Rng(seed ^ 0x5bd1e995);
    this.kernel = p.images.length - 1;
    this.userImages = p.images.length - 1;
    if (p.blocks >= BLOCK_SPAN || p.images.some((i) => i.baseLo + i.code.length > 0xffffffff))
      throw new Error("large program: too many blocks or an image crossing a 4 GiB boundary");
  }

  /**
   * The next segment of the run: at least `insns` instructions, ending in user mode at
   * a block's start (with an `end` record naming it).
   */
  segment(insns: number): Execution {
    const b = new ExecBuilder().cr3(0, LARGE_CR3).cpl(3);
    const stop = this.insns + insns;
    while (this.insns < stop || this.inKernel || this.k !== 0) this.step(b);
    const img = this.p.images[this.img]!;
    return b.end(img.baseHi, img.baseLo + img.start[this.blk]!).build();
  }

  /** Run the current block from instruction k on: to its terminator's target, or into an interrupt. */
  private step(b: ExecBuilder): void {
    const img = this.p.images[this.img]!;
    const first = img.first[this.blk]!;
    const last = img.first[this.blk + 1]!;
    let off = img.start[this.blk]!;
    for (let i = first; i < first + this.k; i++) off += img.sizes[i]!;
    for (let i = first + this.k; ; i++) {
      if (!this.inKernel && this.rng.chance(INTERRUPT_CHANCE)) {
        this.interrupt(b, img.baseHi, img.baseLo + off, i - first);
        return;
      }
      if (i === last) break;
      b.insn(img.baseHi, img.baseLo + off, img.sizes[i]!, InsnClass.Other);
      off += img.sizes[i]!;
      this.insns++;
    }
    this.k = 0;
    this.terminate(b, off);
  }

  /** An interrupt before instruction `k` of the current block at `ip`: into the kernel's handler. */
  private interrupt(b: ExecBuilder, hi: number, lo: number, k: number): void {
    const kimg = this.p.images[this.kernel]!;
    const handler = kimg.blocks > 1 ? 1 : 0;
    b.transfer(ExecEvent.Interrupt, 32, hi, lo, kimg.baseHi, kimg.baseLo + kimg.start[handler]!);
    b.cpl(0);
    this.resume = this.img * BLOCK_SPAN + this.blk;
    this.resumeK = k;
    this.enterKernel(handler);
  }

  private enterKernel(blk: number): void {
    this.inKernel = true;
    this.img = this.kernel;
    this.blk = blk;
    this.k = 0;
    this.kernelStack.length = 0;
  }

  /** Execute the current block's terminator at offset `off` and move to where it goes. */
  private terminate(b: ExecBuilder, off: number): void {
    const img = this.p.images[this.img]!;
    const blk = this.blk;
    const t = img.term[blk]! as Term;
    const target = img.target[blk]!;
    const zlc = t === Term.Call && target === blk + 1 ? InsnFlag.ZeroLengthCall : 0;
    b.insn(img.baseHi, img.baseLo + off, TERM_SIZE[t]!, TERM_CLASS[t]!, zlc);
    this.insns++;
    const stack = this.inKernel ? this.kernelStack : this.userStack;
    const here = this.img * BLOCK_SPAN;
    switch (t) {
      case Term.Jcc:
        this.blk = this.rng.chance(0.5) ? target : blk + 1;
        return;
      case Term.Jmp:
        this.blk = target;
        return;
      case Term.Call:
        push(stack, here + blk + 1);
        this.blk = target;
        return;
      case Term.CallInd:
        push(stack, here + blk + 1);
        this.anywhere();
        // With functions, a call goes to the first block of the function the target is in.
        if (this.p.functionBlocks > 0) this.blk -= this.blk % this.p.functionBlocks;
        return;
      case Term.JmpInd:
        this.anywhere();
        return;
      case Term.Ret: {
        const back = stack.pop();
        if (back !== undefined) this.goTo(back);
        // In a program with functions, user code's outermost return goes back to the
        // loop that called it, main's first block, as a real program's frames return
        // to the caller that started them; else anywhere.
        else if (this.p.functionBlocks > 0 && !this.inKernel) this.goTo(0);
        else this.anywhere();
        return;
      }
      case Term.Syscall:
        b.cpl(0);
        this.resume = here + blk + 1;
        this.resumeK = 0;
        this.enterKernel(0);
        return;
      default:
        // SYSRET or IRETQ: back to user mode where the kernel was entered.
        b.cpl(3);
        this.inKernel = false;
        this.goTo(this.resume);
        this.k = this.resumeK;
    }
  }

  /** An indirect branch's target: any block of any user image, or of the kernel in the kernel. */
  private anywhere(): void {
    if (!this.inKernel) this.img = this.rng.below(this.userImages);
    this.blk = this.rng.below(this.p.images[this.img]!.blocks);
  }

  private goTo(at: number): void {
    this.img = Math.floor(at / BLOCK_SPAN);
    this.blk = at % BLOCK_SPAN;
    this.k = 0;
  }
}

/** Push a return address, keeping the software stack bounded (a deep random walk drops its oldest calls). */
function push(stack: number[], at: number): void {
  if (stack.length >= 65536) stack.splice(0, 32768);
  stack.push(at);
}

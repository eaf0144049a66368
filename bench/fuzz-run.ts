/**
 * Fuzzing-like runs of a one-image program (bench/large-program.ts with
 * {@link FUZZ_LAYOUT}): test case after test case, each starting at the entry block
 * with an empty stack and running a few hundred thousand instructions, as a fuzzer
 * runs its target again and again on similar inputs.
 *
 * The paths repeat the way a fuzz target's do: each conditional branch has a bias
 * fixed by the program seed (most go one way 98% of the time, some are a coin toss, as
 * input-dependent branches are), and each indirect branch or return without a known
 * call site has two possible targets. Returns go back to their calls.
 */
import { InsnClass, InsnFlag } from "../src/isa/types.js";
import { ExecBuilder, type Execution } from "../src/unit/exec/types.js";
import { type ImageLayout, type LargeProgram, TERM_SIZE, Term } from "./large-program.js";
import { LARGE_CR3, TERM_CLASS } from "./large-run.js";
import { Rng } from "./prng.js";

/** Terminator weights of the target: no system calls (it runs in user mode only, traced alone). */
const FUZZ_WEIGHTS = [50, 8, 13, 4, 4, 21, 0, 0, 0];

/** The target: one image at 0x400000, all the code. */
export const FUZZ_LAYOUT: readonly ImageLayout[] = [
  { name: "target", kernel: false, baseHi: 0, baseLo: 0x400000, share: 1, weights: FUZZ_WEIGHTS },
];

/** Taken probabilities of conditional branches and how often each occurs. */
const BIASES = [0.02, 0.98, 0.5];
const BIAS_WEIGHTS = [45, 45, 10];

export class FuzzRun {
  private readonly rng: Rng;
  private readonly taken: Float64Array;
  /** Two possible targets per block, for its indirect branch or unmatched return. */
  private readonly indirect: Int32Array;
  private readonly stack: number[] = [];
  /** Instructions and test cases so far. */
  insns = 0;
  cases = 0;

  constructor(
    private readonly p: LargeProgram,
    seed: number,
  ) {
    if (p.images.length !== 1) throw new Error("fuzz run: the program must have one image");
    const blocks = p.images[0]!.blocks;
    const shape = new Rng(seed ^ 0x2545f491);
    this.taken = Float64Array.from({ length: blocks }, () => BIASES[shape.pick(BIAS_WEIGHTS)]!);
    this.indirect = Int32Array.from({ length: 2 * blocks }, () => shape.below(blocks));
    this.rng = new Rng(seed ^ 0x68e31da4);
  }

  /** The next test case: from the entry block until at least `insns` instructions ran, ending at a block's start. */
  testCase(insns: number): Execution {
    const img = this.p.images[0]!;
    const b = new ExecBuilder().cr3(0, LARGE_CR3).cpl(3);
    this.stack.length = 0;
    let blk = 0;
    for (let n = 0; n < insns; n++) {
      let off = img.start[blk]!;
      for (let i = img.first[blk]!; i < img.first[blk + 1]!; i++) {
        b.insn(img.baseHi, img.baseLo + off, img.sizes[i]!, InsnClass.Other);
        off += img.sizes[i]!;
        n++;
      }
      blk = this.terminate(b, blk, off);
    }
    this.cases++;
    const exec = b.end(img.baseHi, img.baseLo + img.start[blk]!).build();
    this.insns += exec.insnCount;
    return exec;
  }

  /** Execute block `blk`'s terminator at offset `off`; the block it goes to. */
  private terminate(b: ExecBuilder, blk: number, off: number): number {
    const img = this.p.images[0]!;
    const t = img.term[blk]! as Term;
    const target = img.target[blk]!;
    const zlc = t === Term.Call && target === blk + 1 ? InsnFlag.ZeroLengthCall : 0;
    b.insn(img.baseHi, img.baseLo + off, TERM_SIZE[t]!, TERM_CLASS[t]!, zlc);
    const other = this.indirect[2 * blk + this.rng.below(2)]!;
    switch (t) {
      case Term.Jcc:
        return this.rng.chance(this.taken[blk]!) ? target : blk + 1;
      case Term.Jmp:
        return target;
      case Term.Call:
        this.push(blk + 1);
        return target;
      case Term.CallInd:
        this.push(blk + 1);
        return other;
      case Term.Ret:
        return this.stack.pop() ?? other;
      default:
        return other;
    }
  }

  /** Push a return block, keeping the stack bounded (a deep walk drops its oldest calls). */
  private push(blk: number): void {
    if (this.stack.length >= 65536) this.stack.splice(0, 32768);
    this.stack.push(blk);
  }
}

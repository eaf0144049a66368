/**
 * `ptkit flow --block-decoder` (the default): blocks of instructions, printed one
 * instruction per line as ptxed prints them, by walking each block through the code.
 */
import { Block, type BlockDecoder, BlockTally } from "../flow/index.js";
import { ErrorCode, errorMessage, hex64 } from "../packet/index.js";
import { checkBlock } from "./flow-check.js";
import type { FlowSession, FlowUnit } from "./flow-session.js";
import { disassembly, insnLead, rawBytes, textOptions } from "./flow-text.js";
import type { CodeWalker } from "./flow-walk.js";

export class BlockUnit implements FlowUnit {
  /** The last block decoded (errors are reported against it). */
  readonly block = new Block();
  /**
   * Every block is wanted on its own (an analysis feeds on them): with --quiet and no
   * --check the unit otherwise takes blocks in runs, counting them (BlockDecoder.nextRun).
   */
  eachBlock = false;
  private readonly tally = new BlockTally();
  private readonly report = (line: string) => this.session.lines.line(line);

  constructor(
    readonly decoder: BlockDecoder,
    private readonly session: FlowSession,
    private readonly walker: CodeWalker,
  ) {}

  reset(): void {
    this.block.clear();
  }

  decodeOne(): number {
    const s = this.session;
    const o = s.out;
    const offset = s.unitStart(this.decoder, this.walker);
    if (offset < 0) return offset;
    const block = this.block;
    if (o.quiet && !o.check && !this.eachBlock) {
      const tally = this.tally;
      tally.blocks = 0;
      tally.insns = 0;
      const status = this.decoder.nextRun(block, tally);
      s.insnCount += tally.insns;
      s.blockCount += tally.blocks;
      return status;
    }
    const status = this.decoder.next(block);
    // Even a block that ends in an error holds the instructions before it.
    s.insnCount += block.ninsn;
    s.blockCount++;
    if (!o.quiet) this.print(block, offset);
    if (o.check) checkBlock(this.walker, block, this.decoder.image, offset, this.report);
    return status;
  }

  private print(block: Block, offset: number): void {
    const s = this.session;
    const o = s.out;
    if (o.showBlocks) s.lines.line(o.stats ? `[block ${s.blockCount.toString(16)}]` : "[block]");
    if (block.ninsn === 0) return;
    const w = this.walker;
    const image = this.decoder.image;
    const mode = block.mode;
    let hi = block.ipHi;
    let lo = block.ipLo;
    const options = textOptions(o.att, o.rawInsn);
    for (let n = block.ninsn; ; ) {
      const lead = insnLead(o.offset ? offset : undefined, s.time.hi, s.time.lo, o.time, block.speculative);
      // An instruction listed before: its text kept and its decode cached, no bytes fetched.
      const kept = o.noInst ? undefined : w.text(hi, lo, mode, options);
      if (kept !== undefined && w.known(hi, lo, mode) > 0) s.lines.line(lead + kept);
      else {
        const ip = hex64(hi, lo);
        let line = lead + ip;
        // Without disassembly, an instruction decoded before needs no bytes.
        if (!(o.noInst && w.known(hi, lo, mode) > 0)) {
          const err = w.fetchInBlock(block, image, hi, lo);
          if (err < 0) {
            s.lines.line(`${line} [fetch error: ${errorMessage(err)}]`);
            break;
          }
          if (w.decode(hi, lo, mode) < 0) {
            const raw = rawBytes(w.bytes, 0, w.count);
            s.lines.line(`${line}${raw} [decode error: ${errorMessage(ErrorCode.BadInsn)}]`);
            break;
          }
          if (!o.noInst) {
            const text = ip + disassembly(w.fetched, 0, w.info.length, hi, lo, mode, o.att, o.rawInsn);
            w.keepText(hi, lo, mode, options, text);
            line = lead + text;
          }
        }
        s.lines.line(line);
      }
      if (--n === 0) break;
      hi = w.next.hi;
      lo = w.next.lo;
    }
    // The walk must end at the block's last instruction.
    if (hi !== block.endIpHi || lo !== block.endIpLo)
      s.diag(this.decoder, hi, lo, "reconstruct error", -ErrorCode.NoSync);
  }

  /**
   * ptxed blames the instruction after the block's last (where the decoder could not go
   * on), unless the query failed at the last instruction or the block is empty.
   */
  diagnose(what: string, code: number): void {
    const block = this.block;
    let hi = block.ipHi;
    let lo = block.ipLo;
    if (block.ninsn !== 0) {
      hi = block.endIpHi;
      lo = block.endIpLo;
      const w = this.walker;
      if (
        code !== -ErrorCode.BadQuery &&
        w.fetchInBlock(block, this.decoder.image, hi, lo) === 0 &&
        w.decode(hi, lo, block.mode) > 0
      ) {
        hi = w.next.hi;
        lo = w.next.lo;
      }
    }
    this.session.diag(this.decoder, hi, lo, what, code);
  }
}

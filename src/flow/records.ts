/**
 * What the flow decoders report: {@link Block} (libipt's `pt_block`) and
 * {@link Insn} (libipt's `pt_insn`). One caller-owned instance is filled per call;
 * every field is a number (64-bit addresses as unsigned 32-bit halves) and the
 * getters at the bottom give BigInts at the API edge.
 */

import { doubleFields, toBigInt } from "../base/halves.js";
import * as isa from "../isa/index.js";
import * as flowClass from "./flow-class.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { InsnClass } = isa;
type InsnClass = isa.InsnClass;
const { FlowClass } = flowClass;
type FlowClass = flowClass.FlowClass;

/** Longest x86 instruction, the size of the `raw` arrays. */
export const MAX_RAW = 15;

/**
 * A sequence of instructions that ran one after the other without needing trace to
 * get from one to the next: straight-line code and direct jumps and calls. The
 * instructions themselves are in the memory image: walk from `ip` to `endIp`
 * decoding `ninsn` instructions (or use {@link InsnDecoder}).
 */
export class Block {
  /** First instruction. */
  ipHi = 0;
  ipLo = 0;
  /** Last instruction (equal to ip for a one-instruction block). */
  endIpHi = 0;
  endIpLo = 0;
  /** Image section of the instructions ({@link Section.id}); 0 when none was read. */
  isid = 0;
  /** {@link ExecMode} of every instruction in the block. */
  mode = 0;
  /** {@link FlowClass} of the last instruction, or Unknown when the decoder did not learn it. */
  iclass: FlowClass = FlowClass.Unknown;
  /** Instructions in the block; 0 for an empty block (events or errors only). */
  ninsn = 0;
  /** The instructions ran speculatively (inside a TSX transaction). */
  speculative = false;
  /**
   * The last instruction does not fit in its section (it continues in the next):
   * its bytes are in `raw[0..size)`. Otherwise `raw`/`size` are not set.
   */
  truncated = false;
  size = 0;
  readonly raw = new Uint8Array(MAX_RAW);
  /**
   * ptkit's own: the last instruction's length where the walk that ended the block
   * had it at hand (a conditional jump, an indirect call, a direct call or jump the
   * block ends with, from the block cache), else 0:
   * see {@link BlockDecoder.lastInsnSize}.
   */
  lastSize = 0;
  /**
   * ptkit's own: the last instruction's isa InsnClass where the decoder had it at hand
   * (an instruction it decoded, a direct call or jump from the walk's table, an
   * indirect branch the decode cache has), else -1: ptkit perf's branch times ask
   * whether each block's last call or jump is a direct one.
   */
  lastClass = -1;

  clear(): this {
    return this.begin(0, 0, 0, false);
  }

  /** An empty block at (ipHi:ipLo) in `mode`: what a decoder fills from (each field set once). */
  begin(ipHi: number, ipLo: number, mode: number, speculative: boolean): this {
    this.ipHi = ipHi;
    this.ipLo = ipLo;
    this.endIpHi = 0;
    this.endIpLo = 0;
    this.isid = 0;
    this.mode = mode;
    this.iclass = FlowClass.Unknown;
    this.ninsn = 0;
    this.speculative = speculative;
    this.truncated = false;
    this.size = 0;
    this.lastSize = 0;
    this.lastClass = -1;
    return this;
  }

  get ip(): bigint {
    return toBigInt(this.ipHi, this.ipLo);
  }
  get endIp(): bigint {
    return toBigInt(this.endIpHi, this.endIpLo);
  }
}
// Addresses: see doubleFields.
doubleFields(new Block(), ["ipHi", "ipLo", "endIpHi", "endIpLo"]);

/** One executed instruction. */
export class Insn {
  ipHi = 0;
  ipLo = 0;
  /** Image section it was read from ({@link Section.id}). */
  isid = 0;
  /** {@link ExecMode}. */
  mode = 0;
  /** libipt's class; Unknown when the instruction could not be decoded. */
  iclass: FlowClass = FlowClass.Unknown;
  /** ptkit's finer class from the isa layer (valid when `iclass` is not Unknown). */
  insnClass: InsnClass = InsnClass.Other;
  /** Length in bytes; the bytes are `raw[0..size)`. */
  size = 0;
  readonly raw = new Uint8Array(MAX_RAW);
  /** Ran inside a TSX transaction. */
  speculative = false;
  /** The bytes continue past the end of section `isid` (read from the next one). */
  truncated = false;

  clear(): this {
    this.ipHi = 0;
    this.ipLo = 0;
    this.isid = 0;
    this.mode = 0;
    this.iclass = FlowClass.Unknown;
    this.insnClass = InsnClass.Other;
    this.size = 0;
    this.speculative = false;
    this.truncated = false;
    return this;
  }

  /** Make this a copy of `from` (its bytes included). */
  copy(from: Insn): this {
    this.ipHi = from.ipHi;
    this.ipLo = from.ipLo;
    this.isid = from.isid;
    this.mode = from.mode;
    this.iclass = from.iclass;
    this.insnClass = from.insnClass;
    this.size = from.size;
    this.raw.set(from.raw);
    this.speculative = from.speculative;
    this.truncated = from.truncated;
    return this;
  }

  get ip(): bigint {
    return toBigInt(this.ipHi, this.ipLo);
  }

  /** The instruction bytes (a copy; API edge). */
  get bytes(): Uint8Array {
    return this.raw.slice(0, this.size);
  }
}
// Addresses: see doubleFields.
doubleFields(new Insn(), ["ipHi", "ipLo"]);

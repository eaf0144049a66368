/** `ptkit flow --insn-decoder`: one instruction at a time, as ptxed prints and checks them. */
import { Status } from "../event/index.js";
import { FlowClass, Insn, type InsnDecoder } from "../flow/index.js";
import { ErrorCode, errorMessage, hex64 } from "../packet/index.js";
import { checkInsn } from "./flow-check.js";
import type { FlowSession, FlowUnit } from "./flow-session.js";
import { disassembly, insnLead, rawBytes, textOptions } from "./flow-text.js";
import type { CodeWalker } from "./flow-walk.js";

export class InsnUnit implements FlowUnit {
  /** The last instruction decoded (errors are reported against it). */
  readonly insn = new Insn();
  private readonly report = (line: string) => this.session.lines.line(line);
  /**
   * Return after each instruction (for a wrapper that looks at each: AnalysisUnit);
   * otherwise {@link decodeOne} goes on while the status is 0.
   */
  eachInsn = false;

  constructor(
    readonly decoder: InsnDecoder,
    private readonly session: FlowSession,
    private readonly walker: CodeWalker,
  ) {}

  reset(): void {
    this.insn.clear();
  }

  /**
   * Decode, print, count and check instructions: one, and while its status is 0 (no
   * event, end or error, so nothing for the session's loop to do before the next) the
   * next ones, unless {@link eachInsn}.
   */
  decodeOne(): number {
    const s = this.session;
    const o = s.out;
    if (o.quiet && !o.check && !o.offset && !this.eachInsn) return this.countOnly();
    const decoder = this.decoder;
    const insn = this.insn;
    decoder.raw = true;
    for (;;) {
      const offset = s.unitStart(decoder, this.walker);
      if (offset < 0) return offset;
      const status = decoder.next(insn);
      if (status < 0) {
        // An event came first that the decoder could not announce: take it now.
        if (status === -ErrorCode.EventIgnored) return Status.EventPending;
        // An error after decoding the instruction still shows the instruction.
        if (insn.iclass === FlowClass.Unknown) return status;
      }
      if (!o.quiet) s.lines.line(this.text(insn, offset));
      s.insnCount++;
      if (o.check) checkInsn(this.walker, insn, offset, this.report);
      if (status !== 0 || this.eachInsn) return status;
    }
  }

  /**
   * {@link decodeOne} where instructions are only counted (nothing printed, checked or
   * handed on: `--quiet --stat`): the same loop without the questions it asks of each.
   */
  private countOnly(): number {
    const decoder = this.decoder;
    const insn = this.insn;
    // No instruction's bytes are read here (an error's diagnosis fetches its own).
    decoder.raw = false;
    let n = 0;
    let status: number;
    for (;;) {
      status = decoder.next(insn);
      if (status < 0) {
        if (status === -ErrorCode.EventIgnored) {
          status = Status.EventPending;
          break;
        }
        if (insn.iclass === FlowClass.Unknown) break;
      }
      n++;
      if (status !== 0) break;
    }
    this.session.insnCount += n;
    return status;
  }

  private text(insn: Insn, offset: number): string {
    const s = this.session;
    const o = s.out;
    const lead = insnLead(o.offset ? offset : undefined, s.time.hi, s.time.lo, o.time, insn.speculative);
    const { ipHi: hi, ipLo: lo, mode } = insn;
    if (o.noInst) return lead + hex64(hi, lo);
    const w = this.walker;
    // An instruction listed before: its text kept.
    const options = textOptions(o.att, o.rawInsn);
    const kept = w.text(hi, lo, mode, options);
    if (kept !== undefined) return lead + kept;
    const ip = hex64(hi, lo);
    if (w.fetchRaw(insn.raw, insn.size) < 0 || w.decode(hi, lo, mode) < 0)
      return `${lead}${ip}${rawBytes(insn.raw, 0, insn.size)} [decode error: ${errorMessage(ErrorCode.BadInsn)}]`;
    const text = ip + disassembly(w.fetched, 0, w.info.length, hi, lo, mode, o.att, o.rawInsn);
    w.keepText(hi, lo, mode, options, text);
    return lead + text;
  }

  /**
   * ptxed blames the instruction after the last one decoded (where the decoder could
   * not go on), unless the query itself failed there or nothing was decoded.
   */
  diagnose(what: string, code: number): void {
    const insn = this.insn;
    let hi = insn.ipHi;
    let lo = insn.ipLo;
    const w = this.walker;
    if (
      code !== -ErrorCode.BadQuery &&
      insn.iclass !== FlowClass.Unknown &&
      w.fetchRaw(insn.raw, insn.size) === 0 &&
      w.decode(hi, lo, insn.mode) > 0
    ) {
      hi = w.next.hi;
      lo = w.next.lo;
    }
    this.session.diag(this.decoder, hi, lo, what, code);
  }
}

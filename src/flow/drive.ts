/**
 * The decode loop, written once: synchronise, hand over the events before each
 * instruction or block, take the next one, and after an error go on from the next
 * PSB (or, with `resync`, from the next event that tells an IP), as ptxed does.
 *
 * ```ts
 * const dec = new InsnDecoder(trace, { image });
 * const end = drive(dec, new Insn(), {
 *   record: (insn) => console.log(insn.ip.toString(16)),
 *   event: (ev) => console.log(ev.type),
 *   error: (status, offset) => console.log(`${errorMessage(status)} at ${offset}`),
 * });
 * // end: -ErrorCode.Eos when the trace was decoded to its end
 * ```
 *
 * The details every hand-written loop has to get right are here: events are drained
 * only while the status is not an error; an instruction (or a block's instructions)
 * decoded before an error is still reported; the instruction decoder's -EventIgnored
 * (an event came due that it had not announced) means "fetch the event first"; and a
 * synchronisation that fails without moving on ends the decode instead of repeating.
 *
 * A loop that must be as fast as it can be (one call site per decoder class, state in
 * locals) is still best written by hand: here the sink's callbacks are calls through
 * an object.
 */

import * as errors from "../base/errors.js";
import { PtEvent, Status } from "../event/types.js";
import type { BlockDecoder } from "./block-decoder.js";
import type { InsnDecoder } from "./insn-decoder.js";
import type { Block, Insn } from "./records.js";

const { ErrorCode } = errors;

export interface DecodeSink<R> {
  /**
   * An instruction, or a block with instructions. `status` is what the decoder
   * returned with it: an error (negative) after it still shows what ran before.
   */
  record(rec: R, status: number): void;
  /** An event, in trace order before the record it precedes. */
  event?(ev: PtEvent): void;
  /**
   * An error at trace `offset` (-1: unknown); `sync` when it was a synchronisation
   * that failed (ptxed's "sync error"). Return false to stop there (drive returns
   * `status`); anything else goes on.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a callback may return nothing.
  error?(status: number, offset: number, sync: boolean): boolean | void;
}

export interface DriveOptions {
  /**
   * After an error, go on from the next event that tells an IP (`resync`, ptxed's
   * --resync-on-error) instead of the next PSB (`syncForward`).
   */
  resync?: boolean;
  /** The event record to fill (default: a new one). */
  ev?: PtEvent;
}

/**
 * Decode the whole trace with `dec` into `rec`, telling `sink`: -Eos when the trace
 * ended, or the error the sink stopped at.
 */
export function drive(dec: InsnDecoder, rec: Insn, sink: DecodeSink<Insn>, options?: DriveOptions): number;
export function drive(dec: BlockDecoder, rec: Block, sink: DecodeSink<Block>, options?: DriveOptions): number;
export function drive(
  dec: InsnDecoder | BlockDecoder,
  rec: Insn | Block,
  sink: DecodeSink<Insn> | DecodeSink<Block>,
  options: DriveOptions = {},
): number {
  const ev = options.ev ?? new PtEvent();
  const record = sink.record as (rec: Insn | Block, status: number) => void;
  const isBlock = "ninsn" in rec;
  // Where the last synchronisation failed, and the last PSB synchronised onto: a
  // synchronisation that does not get past them would repeat forever.
  let failedSync = -1;
  let status = dec.syncForward();
  let psb = status >= 0 ? dec.syncOffset : -1;
  // Whether the status in hand comes from a synchronisation.
  let syncing = true;
  for (;;) {
    if (status < 0) {
      if (status === -ErrorCode.Eos) return status;
      if (sink.error?.(status, dec.offset, syncing) === false) return status;
      syncing = true;
      if (options.resync === true) {
        status = resync(dec, ev, sink);
        if (status >= 0 || status === -ErrorCode.Eos) continue;
        // A resync that fails is reported, and the next PSB taken (as ptxed does).
        if (sink.error?.(status, dec.offset, true) === false) return status;
      }
      status = dec.syncForward();
      if (status >= 0) {
        if (dec.syncOffset <= psb) return -ErrorCode.Eos;
        psb = dec.syncOffset;
      } else if (status !== -ErrorCode.Eos) {
        if (dec.offset <= failedSync) return status;
        failedSync = dec.offset;
      }
      continue;
    }
    syncing = false;
    while (status >= 0 && status & Status.EventPending) {
      status = dec.event(ev);
      if (status >= 0) sink.event?.(ev);
    }
    if (status < 0) continue;
    if (status & Status.Eos) return -ErrorCode.Eos;
    if (isBlock) {
      const block = rec as Block;
      status = (dec as BlockDecoder).next(block);
      if (block.ninsn > 0) record(block, status);
    } else {
      const insn = rec as Insn;
      status = (dec as InsnDecoder).next(insn);
      if (status === -ErrorCode.EventIgnored) status = Status.EventPending;
      else if (status >= 0 || insn.iclass !== 0) record(insn, status);
    }
  }
}

/** Resynchronise at the next event that tells an IP, handing over the events without one on the way. */
function resync(
  dec: InsnDecoder | BlockDecoder,
  ev: PtEvent,
  sink: DecodeSink<Insn> | DecodeSink<Block>,
): number {
  for (;;) {
    const status = dec.resync();
    if (status !== -ErrorCode.EventIgnored) return status;
    const got = dec.event(ev);
    if (got < 0) return got;
    sink.event?.(ev);
  }
}

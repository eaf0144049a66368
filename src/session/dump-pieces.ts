/**
 * `ptkit dump --jobs N`: the listing of a piece of a raw trace (see packet/chunks.ts),
 * as a decoding thread makes it, and which dumps can be made from pieces.
 *
 * What crosses a PSB in a dump: the packet decoder's position (a packet over the
 * PSB, an error's resync past it: the merge decodes such a piece again from where
 * the one before stopped, carrying the decoder state, see {@link dumpPiece}); and,
 * with some options, what the tracking columns show: the last IP (`--lastip`: ptdump
 * does not reset it at PSB), time and calibration (`--time`, `--tcal`, and the
 * sideband printed as time passes). Dumps with those run in one piece.
 */
import type { TraceBytes } from "../packet/trace-bytes.js";
import { type DumpCarry, Dumper, type DumpNote } from "./dump-listing.js";
import type { DumpOptions } from "./dump-options.js";
import { LineWriter } from "./io.js";
import { TextBytes } from "./text-bytes.js";

/** A piece's listing, and where and in what state its decode stopped (offsets relative to its start). */
export interface DumpPiece {
  /** Standard output, UTF-8, in parts. */
  text: Uint8Array[];
  /** Notes for standard error (ptkit's own, not ptdump's). */
  notes: DumpNote[];
  /** Whether it found a place to start. */
  synced: boolean;
  stopAt: number;
  carry: DumpCarry;
}

/** Whether a dump with `options` comes out the same from pieces (nothing but the decoder's position crosses a PSB). */
export function dumpsInPieces(options: DumpOptions): boolean {
  return !options.showLastIp && !options.trackTime && options.sideband.channels.length === 0;
}

/**
 * The listing of the piece of `trace` up to `stop`, printed with offsets from
 * `base`; from a fresh sync, or resuming in `carry`'s state.
 */
export function dumpPiece(
  options: DumpOptions,
  trace: TraceBytes,
  base: number,
  stop: number,
  carry?: DumpCarry,
): DumpPiece {
  const text = new TextBytes();
  const notes: DumpNote[] = [];
  const out = new LineWriter((chunk) => text.append(chunk));
  const dumper = new Dumper(options, out, (note) => notes.push(note), true);
  dumper.base = base;
  const stopAt = dumper.run(trace, carry ? { stop, carry } : { stop });
  out.flush();
  return { text: text.bytes(), notes, synced: dumper.synced, stopAt, carry: dumper.carry };
}

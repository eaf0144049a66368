/**
 * `ptkit flow --jobs N`: the flow of a piece of a raw trace (see packet/chunks.ts),
 * as a decoding thread makes it, and which flows can be made from pieces.
 *
 * A piece starts with a fresh sync at its PSB and ends when the decoder reads the
 * PSB that starts the next piece (or one after it). The linear decode of the whole
 * trace carries state over a PSB that a fresh sync does not have; what it is and
 * how each is made exact:
 * - where the decoder is: a piece whose end the decoder passed without reading its
 *   PSB (a packet over it, an error's resync past it) ends where it did read one;
 *   the merge then decodes the next piece again (see {@link FlowPiece.syncedAt}).
 * - the return-compression stack: the processor does not compress a RET whose CALL
 *   lies before the last PSB (SDM, RET compression), so a compressed RET never
 *   needs what the stack held at a PSB, unless the trace breaks that rule: then the
 *   fresh decoder finds its stack empty (`retUnderflow`), and the merge decodes the
 *   piece again with the state carried over (decoding on from the piece before).
 * - IP, execution mode, paging (CR3), TSX state: a PSB+ restates them all, and both
 *   decoders take them from there.
 * - time and calibration: not carried; flows that print time (--time,
 *   --event:time/tick), sideband (which follows time) and the analysis outputs run
 *   in one piece, as do --offset (not yet made relative to pieces) and --check.
 * - blocks: where the block decoder ends a block depends on what its block cache
 *   held (a cold cache splits more: 1,903,811 blocks against 1,880,945 warm for the
 *   same 4 MiB of the large bench trace), so block counts and block lines are not
 *   the same from pieces even as from a second serial decode: --stat:blocks (part of
 *   --stat with the block decoder) and --block:show-blocks run in one piece.
 * A piece ends at the first event after the decoder read the next piece's PSB: the
 * instructions before that event (up to the IP of the PSB+'s FUP) are the piece's.
 */
import { PtEvent } from "../event/index.js";
import { BlockDecoder, InsnDecoder } from "../flow/index.js";
import { seam, sliceSource } from "../packet/chunks.js";
import { ErrorCode } from "../packet/index.js";
import { TraceBytes } from "../packet/trace-bytes.js";
import { wantsAnalysis } from "./analysis-options.js";
import { BlockUnit } from "./flow-block-unit.js";
import { InsnUnit } from "./flow-insn-unit.js";
import { FlowSession } from "./flow-session.js";
import { CodeWalker } from "./flow-walk.js";
import { type ChunkRunner, type ChunkTask, LineWriter, type SessionIo, writeStdoutBytes } from "./io.js";
import { PieceStops } from "./piece-stops.js";
import type { RawSetup } from "./raw-session.js";
import { TextBytes } from "./text-bytes.js";

/** A piece's flow, counts, and how its decode ended. */
export interface FlowPiece {
  /** Standard output, UTF-8, in parts. */
  text: Uint8Array[];
  insnCount: number;
  blockCount: number;
  /** Whether its decode found no PSB at all (only the first piece's counts). */
  noPsb: boolean;
  /** The PSB (relative offset) whose flow comes after the piece's, or -1 when it went to the end. */
  syncedAt: number;
  /** The decoder had read no further than that PSB when it stopped (else its flow may have begun). */
  clean: boolean;
  /** Whether a compressed RET found the return stack empty. */
  retUnderflow: boolean;
  /** The flow past the piece's end, through the PSB segment after it, and its counts. */
  overlap: Uint8Array;
  overlapInsn: number;
  /** Bytes and counts of the flow of the piece's first PSB segment. */
  prefix: number;
  prefixInsn: number;
}

/** Whether a flow with this setup comes out the same from pieces. */
export function flowsInPieces(setup: RawSetup): boolean {
  const o = setup.output;
  const config = setup.pt?.step.config;
  return (
    config !== undefined &&
    !wantsAnalysis(setup.analysis) &&
    setup.sideband.channels.length === 0 &&
    !o.offset &&
    !o.time &&
    !o.eventTime &&
    !o.check &&
    !o.showBlocks &&
    !o.statBlocks &&
    !config.enableTickEvents
  );
}

/** Output and counts at one place of a piece's decode. */
interface Mark {
  bytes: number;
  insn: number;
  blocks: number;
}

/**
 * Decode the piece of `trace` up to `stop` (relative) with `setup`'s code and
 * options; `base` is its offset in the whole trace. The decode goes on past the
 * piece's end through the PSB segment after it (the overlap), and notes where its
 * own first PSB segment ended (the prefix): the merge checks that the overlap of a
 * piece is the prefix of the next, which a decoder state over the seam that a fresh
 * sync does not have (such as an indirect branch whose TIP comes after the PSB+)
 * would change.
 */
export function flowPiece(setup: RawSetup, trace: TraceBytes, base: number, stop: number): FlowPiece {
  const text = new TextBytes();
  const out = new LineWriter((chunk) => text.append(chunk));
  const session = new FlowSession(setup.output, out, new PtEvent());
  session.base = base;
  let retUnderflow = false;
  session.onError = (code) => {
    if (code === -ErrorCode.RetStackEmpty) retUnderflow = true;
  };
  const here = (): Mark => {
    out.flush();
    return { bytes: text.length, insn: session.insnCount, blocks: session.blockCount };
  };
  const stops = new PieceStops<Mark & { clean: boolean }>(stop);
  session.stop = stops.stop;
  session.onStop = (psb, clean) => {
    const go = stops.reached(psb, () => ({ ...here(), clean }));
    session.stop = stops.stop;
    return go;
  };
  const unit = unitFor(setup, trace, session);
  session.run(unit);
  const end = here();
  const prefix = stops.prefix ?? end;
  const seam = stops.seam;
  const own = seam ?? end;
  return {
    text: [text.slice(0, own.bytes)],
    insnCount: own.insn,
    blockCount: own.blocks,
    noPsb: session.noPsb,
    syncedAt: stops.seamPsb,
    clean: seam ? seam.clean : true,
    retUnderflow,
    overlap: seam ? text.slice(seam.bytes, end.bytes) : new Uint8Array(0),
    overlapInsn: seam ? end.insn - seam.insn : 0,
    prefix: prefix.bytes,
    prefixInsn: prefix.insn,
  };
}

/** Whether the flow of `next` begins with what `before` decoded past its end (see {@link flowPiece}). */
function overlapHolds(before: FlowPiece, next: FlowPiece): boolean {
  // Not the block counts: they depend on what the block cache held (and are not printed from pieces).
  if (before.overlapInsn !== next.prefixInsn) return false;
  const want = before.overlap;
  if (want.length !== next.prefix) return false;
  let at = 0;
  for (const part of next.text) {
    const n = Math.min(part.length, want.length - at);
    for (let i = 0; i < n; i++) if (part[i] !== want[at + i]) return false;
    at += n;
    if (at === want.length) break;
  }
  return at === want.length;
}

/** The counts of a flow made from pieces. */
export interface FlowCounts {
  insnCount: number;
  blockCount: number;
  noPsb: boolean;
}

/**
 * Decode the pieces starting at `starts` on `jobs` threads and write their flows
 * in order. Each piece is checked against where the decode before it stands: taken
 * as it is, skipped (the decode went past it), or decoded again here from the PSB
 * where the decode stands. A piece that needed the return stack from before its PSB
 * (see above) makes the rest exact the slow way: the whole trace is decoded again
 * here, the flow printed from where the pieces left off.
 */
export async function flowInPieces(
  runner: ChunkRunner,
  jobs: number,
  tasks: readonly ChunkTask[],
  starts: readonly number[],
  setup: RawSetup,
  out: LineWriter,
  io: SessionIo,
): Promise<FlowCounts> {
  const source = setup.pt!.source;
  const size = source.size;
  const counts: FlowCounts = { insnCount: 0, blockCount: 0, noPsb: false };
  /** Where the decode stands: at the PSB it read last (the end when done). */
  let at = 0;
  let serial = false;
  /** The piece taken last: its overlap must be the prefix of the next. */
  let last: FlowPiece | undefined;
  const take = (piece: FlowPiece, base: number) => {
    last = piece;
    out.flush();
    for (const part of piece.text) writeStdoutBytes(io, part);
    counts.insnCount += piece.insnCount;
    counts.blockCount += piece.blockCount;
    at = piece.syncedAt < 0 ? size : base + piece.syncedAt;
  };
  // This thread decodes pieces too, with the code it loaded already (one thread fewer
  // to start and load); none once the rest is decoded here anyway (see serial).
  const local = (task: ChunkTask) =>
    serial
      ? undefined
      : flowPiece(setup, TraceBytes.read(sliceSource(source, task.start)), task.start, task.stop);
  const onResult = (result: unknown, i: number) => {
    const start = starts[i]!;
    const stop = starts[i + 1] ?? size;
    const next = serial ? "skip" : seam(at, start, stop);
    if (next === "skip") return;
    let piece = result as FlowPiece;
    let base = start;
    if (i === 0) counts.noPsb = piece.noPsb;
    if (next === "redo") {
      // The decode read the PSB at `at`, inside this piece: from there it is a fresh start too.
      base = at;
      piece = flowPiece(setup, TraceBytes.read(sliceSource(source, base)), base, stop - base);
    }
    // A redone piece starts where the last one ended too: the same check holds.
    if (piece.retUnderflow || !piece.clean || (last !== undefined && !overlapHolds(last, piece))) {
      serial = true;
      return;
    }
    take(piece, base);
  };
  await runner.run(jobs, tasks, onResult, local);
  if (serial) {
    const rest = flowFrom(setup, TraceBytes.read(source), at, out);
    counts.insnCount += rest.insnCount;
    counts.blockCount += rest.blockCount;
  }
  return counts;
}

/**
 * Decode all of `trace` and print the flow from where the decoder reads the PSB at
 * `from` on: the counts of that part.
 */
function flowFrom(setup: RawSetup, trace: TraceBytes, from: number, out: LineWriter): FlowCounts {
  let muted = from > 0;
  out.flush();
  const lines = new LineWriter((text) => {
    if (!muted) out.line(text.slice(0, -1));
  });
  const session = new FlowSession(setup.output, lines, new PtEvent());
  let insn = 0;
  let blocks = 0;
  session.stop = from > 0 ? from : Number.POSITIVE_INFINITY;
  session.onStop = () => {
    lines.flush();
    muted = false;
    insn = session.insnCount;
    blocks = session.blockCount;
    session.stop = Number.POSITIVE_INFINITY;
    return true;
  };
  session.run(unitFor(setup, trace, session));
  lines.flush();
  return { insnCount: session.insnCount - insn, blockCount: session.blockCount - blocks, noPsb: false };
}

function unitFor(setup: RawSetup, trace: TraceBytes, session: FlowSession): BlockUnit | InsnUnit {
  const step = setup.pt!.step;
  // One thread's pieces share what was decoded of the code (a fresh cache per piece costs more than the piece).
  setup.caches ??= new WeakMap();
  const options = { image: setup.image, config: step.config, caches: setup.caches };
  const walker = new CodeWalker();
  return step.decoder === "insn"
    ? new InsnUnit(new InsnDecoder(trace, options), session, walker)
    : new BlockUnit(new BlockDecoder(trace, options), session, walker);
}

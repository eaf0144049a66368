/** `ptkit dump`: the ptdump-compatible packet listing. */
import { diagnosticLine } from "../../base/diagnostic.js";
import { MIN_SKIM_CHUNK, seam, sliceSource } from "../../packet/chunks.js";
import { TraceBytes, type TraceSource } from "../../packet/trace-bytes.js";
import { type DumpCarry, Dumper, type DumpNote } from "../../session/dump-listing.js";
import type { DumpOptions } from "../../session/dump-options.js";
import { type DumpPiece, dumpPiece, dumpsInPieces } from "../../session/dump-pieces.js";
import { noPsbHint, traceFileProblem } from "../../session/file-kind.js";
import {
  type FileRange,
  fileRangeSource,
  parseFileRange,
  type TraceInternals,
} from "../../session/file-range.js";
import { type ChunkRunner, LineWriter, type SessionIo, writeStdoutBytes } from "../../session/io.js";
import { parseJobs, pieceTasks, planPieces } from "../jobs.js";
import { Progress } from "../progress.js";
import { FLOW_HINTS } from "../session-hints.js";
import { VERSION } from "../version.js";
import { DUMP_HELP, parseDumpArgs } from "./options.js";

/**
 * The largest piece of trace a thread dumps at a time: its listing (some 20 bytes of
 * text a byte of trace) is held until it is its turn to be written.
 */
const DUMP_PIECE = 1 << 20;

/** Run `ptkit dump` with `argv` (options and file, no command name); resolves to the exit code. */
export async function runDump(
  argv: readonly string[],
  io: SessionIo,
  internal: TraceInternals = {},
): Promise<number> {
  const args = parseDumpArgs(argv);
  switch (args.kind) {
    case "help":
      io.stdout(DUMP_HELP);
      return 0;
    case "version":
      io.stdout(`ptkit dump ${VERSION}\n`);
      return 0;
    case "error":
      io.stderr(`ptkit dump: ${args.message}\nUse --help or -h for help.\n`);
      return 1;
  }
  const { options } = args;
  if (options.file === undefined) {
    io.stderr(
      `ptkit dump: No processor trace file specified.\n${DUMP_HELP.split("\n")[0]}\n` +
        "example: ptkit dump trace.pt\nUse --help or -h for help.\n",
    );
    return 1;
  }
  const range = parseFileRange(options.file);
  if (typeof range === "string") {
    io.stderr(`ptkit dump: bad file ${options.file}: ${range}.\n`);
    return 1;
  }
  let progress: Progress | undefined;
  // The progress line is cleared before each piece of the listing (both may go to the terminal).
  const out = new LineWriter((text) => {
    progress?.done();
    io.stdout(text);
  });
  const fail = (message: string): number => {
    out.flush();
    io.stderr(`ptkit dump: ${message}\n`);
    return 1;
  };
  // Errata diagnostics come before loading, as in ptdump.
  const noteText = (note: DumpNote) => (typeof note === "string" ? note : diagnosticLine(range.path, note));
  const dumper = new Dumper(options, out, (note) => {
    progress?.done();
    io.stderr(`ptkit dump: ${noteText(note)}\n`);
  });
  const jobs = parseJobs(io, options.jobs);
  if (typeof jobs === "string") return fail(`${jobs}.`);
  const problem = traceFileProblem(io, range, FLOW_HINTS);
  if (problem !== undefined) return fail(problem);
  const source = fileRangeSource(io, range);
  if (typeof source === "string") return fail(source);
  // A quiet dump skims (see dumper.run); a listing's pieces are bounded by what they hold.
  const starts = !dumpsInPieces(options)
    ? [0]
    : options.quiet
      ? planPieces(io, source, jobs, { minChunk: MIN_SKIM_CHUNK })
      : planPieces(io, source, jobs, { maxChunk: DUMP_PIECE });
  if (starts.length > 1 && io.chunks) {
    out.flush(); // the errata diagnostic
    const bar = new Progress(io, "dumping", source.size);
    progress = bar;
    const warn = (note: DumpNote) => {
      bar.done();
      io.stderr(`ptkit dump: ${noteText(note)}\n`);
    };
    const write = (bytes: Uint8Array) => {
      bar.done();
      writeStdoutBytes(io, bytes);
    };
    const synced = await dumpInPieces(io, io.chunks, jobs, options, range, source, starts, write, warn, bar);
    bar.done();
    if (!synced) return fail(`${noPsbHint(io, range, FLOW_HINTS)}.`);
    return 0;
  }
  const trace = TraceBytes.read(source, internal.windowSize);
  if (options.sideband.channels.length > 0) {
    const { openSideband } = await import("../../session/sideband.js"); // the perf layer, only with --pevent
    const session = openSideband(io, out, options.sideband, "dump");
    if (typeof session === "string") return fail(session);
    dumper.sideband = session;
  }
  const bar = new Progress(io, "dumping", trace.size);
  progress = bar;
  dumper.onProgress = (offset) => bar.update(offset);
  dumper.run(trace);
  out.flush();
  bar.done();
  // Nothing to dump is an error (without --no-sync, which starts at the first byte).
  if (!dumper.synced) return fail(`${noPsbHint(io, range, FLOW_HINTS)}.`);
  return 0;
}

/**
 * Dump the pieces of the trace that start at `starts` on `jobs` threads, writing
 * their listings in order; a piece that does not start where the one before
 * stopped is dumped again here from there, in the state it stopped in (see
 * dump-pieces.ts). Resolves to whether the dump found a place to start.
 */
async function dumpInPieces(
  io: SessionIo,
  runner: ChunkRunner,
  jobs: number,
  options: DumpOptions,
  range: FileRange,
  source: TraceSource,
  starts: readonly number[],
  write: (bytes: Uint8Array) => void,
  warn: (note: DumpNote) => void,
  progress: Progress,
): Promise<boolean> {
  const size = source.size;
  let at = 0;
  let carry: DumpCarry = { syncOffset: -1, block: 0 };
  let synced = false;
  const tasks = pieceTasks(io, range, size, starts, "dump", options);
  await runner.run(jobs, tasks, (result, i) => {
    const start = starts[i]!;
    const stop = starts[i + 1] ?? size;
    const next = seam(at, start, stop);
    if (next === "skip") return;
    let piece = result as DumpPiece;
    let base = start;
    if (next === "redo") {
      base = at;
      const trace = TraceBytes.read(sliceSource(source, base));
      piece = dumpPiece(options, trace, base, stop - base, carry);
    }
    // The first piece says whether the dump synced: the others start synced.
    if (i === 0) synced = piece.synced;
    for (const part of piece.text) write(part);
    for (const note of piece.notes) warn(note);
    at = base + piece.stopAt;
    carry = piece.carry;
    progress.update(stop);
  });
  return synced;
}

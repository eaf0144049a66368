/** `ptkit stats`: what a trace holds and how fast it decodes. */
import { parseArgs } from "node:util";
import { errorMessage } from "../../base/errors.js";
import { nowMs } from "../../node/clock.js";
import { MIN_SKIM_CHUNK } from "../../packet/chunks.js";
import { collectStats, type StatsPiece, type TraceStats } from "../../packet/stats.js";
import { StatsMerge } from "../../packet/stats-merge.js";
import { TraceBytes } from "../../packet/trace-bytes.js";
import { PACKET_NAMES, PACKET_TYPE_COUNT } from "../../packet/types.js";
import { noPsbHint, traceFileProblem } from "../../session/file-kind.js";
import { fileRangeSource, parseFileRange, type TraceInternals } from "../../session/file-range.js";
import type { SessionIo } from "../../session/io.js";
import { JOBS_HELP, parseJobs, pieceTasks, planPieces } from "../jobs.js";
import { Progress } from "../progress.js";
import { FLOW_HINTS } from "../session-hints.js";

const HELP = `usage: ptkit stats [--json] [-j N] <ptfile>[:<from>[-<to>]]

Count the packets of a raw Intel PT trace by type, list its PSB segments and decode
errors (with offsets), and measure decode speed.

options:
  --json          print the statistics as one JSON object.
  --max-errors N  list at most N errors (default 20; all are counted).
${JOBS_HELP}
  -h, --help      this text.

examples:
  ptkit stats trace.pt
  ptkit stats --json trace.pt:0x1000 | jq .counts
`;

export function runStats(
  argv: readonly string[],
  io: SessionIo,
  internal: TraceInternals = {},
): number | Promise<number> {
  let parsed: ReturnType<typeof parseStatsArgs>;
  try {
    parsed = parseStatsArgs(argv);
  } catch (e) {
    io.stderr(`ptkit stats: ${(e as Error).message}\nUse --help or -h for help.\n`);
    return 1;
  }
  if (parsed.values.help) {
    io.stdout(HELP);
    return 0;
  }
  const file = parsed.positionals[0];
  if (file === undefined || parsed.positionals.length > 1) {
    io.stderr(
      `ptkit stats: expected exactly one trace file.\n${HELP.split("\n")[0]}\n` +
        "example: ptkit stats trace.pt\nUse --help or -h for help.\n",
    );
    return 1;
  }
  const maxErrors = Number(parsed.values["max-errors"] ?? 20);
  if (!Number.isInteger(maxErrors) || maxErrors < 0) {
    io.stderr(`ptkit stats: --max-errors: bad argument: ${parsed.values["max-errors"]}.\n`);
    return 1;
  }
  const jobs = parseJobs(io, parsed.values.jobs);
  if (typeof jobs === "string") {
    io.stderr(`ptkit stats: ${jobs}.\n`);
    return 1;
  }
  const range = parseFileRange(file);
  if (typeof range === "string") {
    io.stderr(`ptkit stats: bad file ${file}: ${range}.\n`);
    return 1;
  }
  const source = traceFileProblem(io, range, FLOW_HINTS) ?? fileRangeSource(io, range);
  if (typeof source === "string") {
    io.stderr(`ptkit stats: ${source}\n`);
    return 1;
  }
  const progress = new Progress(io, "decoding", source.size);
  const start = nowMs();
  const report = (stats: TraceStats): number => {
    const seconds = (nowMs() - start) / 1000;
    progress.done();
    if (stats.psbOffsets.length === 0) io.stderr(`ptkit stats: ${noPsbHint(io, range, FLOW_HINTS)}.\n`);
    io.stdout(
      parsed.values.json
        ? `${JSON.stringify(statsJson(stats, seconds))}\n`
        : statsText(stats, seconds, maxErrors),
    );
    return 0;
  };
  const starts = planPieces(io, source, jobs, { minChunk: MIN_SKIM_CHUNK });
  if (starts.length > 1 && io.chunks) {
    // In pieces on other threads, merged in order (exactly what one decode gives: see StatsMerge).
    const merge = new StatsMerge(source, maxErrors);
    const tasks = pieceTasks(io, range, source.size, starts, "stats", { maxErrors });
    return io.chunks
      .run(jobs, tasks, (piece, i) => {
        merge.add(piece as StatsPiece, starts[i]!, starts[i + 1] ?? source.size);
        progress.update(starts[i + 1] ?? source.size);
      })
      .then(() => report(merge.result()));
  }
  const stats = collectStats(TraceBytes.read(source, internal.windowSize), {
    onProgress: (at) => progress.update(at),
    progressBytes: 1 << 20,
    maxErrors,
  });
  return report(stats);
}

function parseStatsArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      json: { type: "boolean" },
      jobs: { type: "string", short: "j" },
      "max-errors": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function typeRows(stats: TraceStats): Array<{ name: string; packets: number; bytes: number }> {
  const rows = [];
  for (let t = 0; t < PACKET_TYPE_COUNT; t++) {
    if (stats.counts[t]! > 0)
      rows.push({ name: PACKET_NAMES[t]!, packets: stats.counts[t]!, bytes: stats.typeBytes[t]! });
  }
  return rows.sort((a, b) => b.bytes - a.bytes);
}

function statsJson(stats: TraceStats, seconds: number) {
  return {
    bytes: stats.bytes,
    packets: stats.packets,
    counts: Object.fromEntries(typeRows(stats).map((r) => [r.name, { packets: r.packets, bytes: r.bytes }])),
    psbs: stats.psbOffsets.length,
    psbOffsets: stats.psbOffsets,
    errorCount: stats.errorCount,
    errors: stats.errors.map((e) => ({ offset: e.offset, byte: e.byte, error: errorMessage(e.code) })),
    skippedBytes: stats.skippedBytes,
    truncatedBytes: stats.truncatedBytes,
    seconds,
    mbPerSecond: seconds > 0 ? stats.bytes / 1e6 / seconds : null,
  };
}

function statsText(stats: TraceStats, seconds: number, maxErrors: number): string {
  const lines: string[] = [];
  const pct = (n: number) => (stats.bytes ? ((100 * n) / stats.bytes).toFixed(1) : "0.0");
  lines.push(`bytes        ${stats.bytes}`);
  lines.push(`packets      ${stats.packets}`);
  lines.push(`psb segments ${stats.psbOffsets.length}`);
  lines.push(`errors       ${stats.errorCount}`);
  lines.push(
    `skipped      ${stats.skippedBytes} bytes (${pct(stats.skippedBytes)}%) outside PSB-synchronised decode`,
  );
  if (stats.truncatedBytes)
    lines.push(`truncated    ${stats.truncatedBytes} bytes at the end (packet cut off)`);
  lines.push("");
  lines.push(`${"packet".padEnd(12)}${"count".padStart(12)}${"bytes".padStart(14)}${"% bytes".padStart(9)}`);
  for (const r of typeRows(stats)) {
    lines.push(
      `${r.name.padEnd(12)}${String(r.packets).padStart(12)}${String(r.bytes).padStart(14)}${pct(r.bytes).padStart(9)}`,
    );
  }
  if (stats.errors.length) {
    lines.push("");
    lines.push("errors:");
    for (const e of stats.errors.slice(0, maxErrors)) {
      lines.push(
        `  [${e.offset.toString(16)}: ${errorMessage(e.code)} (byte 0x${e.byte.toString(16).padStart(2, "0")})]`,
      );
    }
    if (stats.errorCount > stats.errors.length)
      lines.push(`  ... ${stats.errorCount - stats.errors.length} more`);
  }
  lines.push("");
  const mbs = seconds > 0 ? (stats.bytes / 1e6 / seconds).toFixed(1) : "-";
  const mps = seconds > 0 ? (stats.packets / 1e6 / seconds).toFixed(2) : "-";
  lines.push(`decoded in ${(seconds * 1000).toFixed(1)} ms: ${mbs} MB/s, ${mps} Mpackets/s`);
  return `${lines.join("\n")}\n`;
}

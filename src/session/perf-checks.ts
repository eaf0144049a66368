/**
 * `ptkit perf` options that name something the file or the disk must have: said
 * at once, not discovered as empty output. A --cpu with no trace, or a --tid the
 * file never shows running, is an error;
 * a lookup directory that is not there, a warning (decoding goes on without it).
 */
import type { AuxStream, PerfTasks } from "../perf/index.js";
import { notADirectory } from "./file-kind.js";
import type { SessionIo } from "./io.js";

/** Why `--cpu cpu` selects nothing in `file`'s `streams`, or undefined when it selects a stream. */
export function cpuProblem(file: string, cpu: number, streams: readonly AuxStream[]): string | undefined {
  if (streams.some((s) => s.cpus.includes(cpu))) return undefined;
  const cpus = [...new Set(streams.flatMap((s) => s.cpus))].sort((a, b) => a - b);
  const has =
    cpus.length === 0
      ? "it has no Intel PT trace"
      : cpus.every((c) => c < 0)
        ? "its trace was recorded per thread, not per CPU: use --tid"
        : `its trace is of CPU${cpus.length === 1 ? "" : "s"} ${cpus.filter((c) => c >= 0).join(", ")}`;
  return `--cpu ${cpu}: no trace of CPU ${cpu} in ${file} (${has}).`;
}

/** Threads listed in a --tid error at most. */
const TIDS_LISTED = 12;

/**
 * Why `--tid tid` selects nothing in `file`, or undefined: a thread is followed
 * when a switch record, ITRACE_START or the sample_id of its MMAP/COMM shows it
 * running, or when it has a stream of its own (per-thread recording).
 */
export function tidProblem(
  file: string,
  tid: number,
  tasks: PerfTasks,
  streams: readonly AuxStream[],
): string | undefined {
  const tids = new Set<number>();
  for (const s of streams) for (const t of s.tids) if (t >= 0) tids.add(t);
  for (const w of tasks.switches) tids.add(w.tid);
  for (const w of tasks.seen) tids.add(w.tid);
  if (tids.has(tid)) return undefined;
  const known = [...tids].sort((a, b) => a - b);
  const listed = known.slice(0, TIDS_LISTED).join(", ");
  const has =
    known.length === 0
      ? "it shows no thread running"
      : `threads seen running: ${listed}${known.length > TIDS_LISTED ? `, ... (${known.length} in all)` : ""}`;
  return `--tid ${tid}: ${file} never shows thread ${tid} running (${has}).`;
}

/** A warning for each directory option (`[option, path]`) that does not name a directory. */
export function lookupDirWarnings(io: SessionIo, dirs: ReadonlyArray<readonly [string, string]>): string[] {
  const out: string[] = [];
  for (const [option, path] of dirs) {
    const why = notADirectory(io, path);
    if (why === undefined) continue;
    const without =
      option === "--buildid-dir"
        ? "the build-id cache is not used"
        : "binaries are looked for at their recorded paths only";
    out.push(`warning: ${option} ${path}: ${why}; ${without}.`);
  }
  return out;
}

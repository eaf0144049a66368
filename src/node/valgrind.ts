/**
 * Running a program under valgrind's lackey with the options whose output
 * src/unit/exec/lackey-log.ts reads: every executed instruction (`--trace-mem=yes`),
 * where each ELF object is mapped (`-v -v`) and where signals resume
 * (`--trace-signals=yes`), all in one log file.
 */
import { spawnSync } from "node:child_process";

/** valgrind's options for a log {@link LackeyConverter} reads, before `--log-file`. */
export const LACKEY_OPTIONS: readonly string[] = [
  "-v",
  "-v",
  "--trace-signals=yes",
  "--tool=lackey",
  "--trace-mem=yes",
];

/** What to install when valgrind is missing. */
export const VALGRIND_HINT = "(apt-get install valgrind)";

/** valgrind's version line ("valgrind-3.19.0"), or undefined when it cannot be run. */
export function valgrindVersion(): string | undefined {
  const r = spawnSync("valgrind", ["--version"], { encoding: "utf8" });
  if (r.error || r.status !== 0) return undefined;
  return r.stdout.trim();
}

export interface LackeyRun {
  /** The program's exit status (valgrind passes it on), or null when a signal ended it. */
  status: number | null;
  /** The program's output. */
  stdout: string;
  stderr: string;
}

/**
 * Run `command` (program and arguments) under lackey, writing the log to `logFile`.
 * Returns the run, or a message when valgrind cannot be started at all.
 */
export function runUnderLackey(
  command: readonly string[],
  logFile: string,
  cwd?: string,
): LackeyRun | string {
  if (valgrindVersion() === undefined) return `valgrind is not installed or does not run ${VALGRIND_HINT}`;
  const r = spawnSync("valgrind", [...LACKEY_OPTIONS, `--log-file=${logFile}`, "--", ...command], {
    encoding: "utf8",
    cwd,
    maxBuffer: 1 << 28,
  });
  if (r.error) return `valgrind failed to run: ${r.error.message}`;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

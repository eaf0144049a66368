/**
 * `ptkit record` options and the `perf record` command line they make. Facts from
 * perf's Documentation/perf-intel-pt.txt and perf-record.txt: the event is
 * `intel_pt/<config terms>/<modifiers>` (`u` user, `k` kernel, none both); config
 * terms `tsc`, `mtc`, `mtc_period=N` (MTC every 2^N crystal-clock ticks, the valid N
 * in caps/mtc_periods, perf's default 3), `cyc` and `cyc_thresh=N` (valid N in
 * caps/cycle_thresholds, needing caps/psb_cyc); `-S`/`--snapshot[=e]` keeps the
 * trace in a ring buffer and writes it on SIGUSR2 (`e`: also when perf exits);
 * `-m,<size>` sizes the AUX (trace) buffer (perf's default: 4 MiB privileged, 128 KiB
 * not).
 */
import { parseArgs } from "node:util";

/** Timing packets: none, TSC at PSBs, fastest MTC, or cycle-accurate. */
export type TimingPreset = "off" | "coarse" | "fine" | "cycle";

export const TIMING_PRESETS: Record<TimingPreset, { terms: string; what: string }> = {
  off: { terms: "tsc=0,mtc=0", what: "none: the smallest trace, no times" },
  coarse: { terms: "tsc,mtc=0", what: "a TSC at each PSB only" },
  fine: { terms: "tsc,mtc,mtc_period=0", what: "MTC at every crystal-clock tick" },
  cycle: { terms: "tsc,mtc,mtc_period=0,cyc", what: "fine plus CYC: cycle-accurate, the largest" },
};

/** AUX buffer for snapshots when --aux-size is not given. */
export const DEFAULT_SNAPSHOT_AUX = "4M";

export interface RecordArgs {
  /** The program and its arguments (after `--`), or undefined with --pid. */
  command: string[] | undefined;
  pid: number | undefined;
  /** Seconds to record an attached process (perf then runs `sleep`). */
  duration: number | undefined;
  output: string;
  user: boolean;
  kernel: boolean;
  snapshot: boolean;
  /** AUX buffer size as perf takes it (`4M`), or undefined for perf's default. */
  auxSize: string | undefined;
  /** Undefined: perf's defaults for the intel_pt PMU. */
  timing: TimingPreset | undefined;
  decode: boolean;
  dryRun: boolean;
  perf: string;
}

const OPTIONS = {
  pid: { type: "string", short: "p" },
  duration: { type: "string" },
  output: { type: "string", short: "o" },
  user: { type: "boolean", short: "u" },
  kernel: { type: "boolean", short: "k" },
  snapshot: { type: "boolean", short: "S" },
  "aux-size": { type: "string" },
  timing: { type: "string" },
  "no-decode": { type: "boolean" },
  "dry-run": { type: "boolean", short: "n" },
  perf: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** The arguments, "help", or an error message. */
export function parseRecordArgs(argv: readonly string[]): RecordArgs | "help" | string {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv : argv.slice(0, dash);
  let p: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    p = parseArgs({ args: [...own], options: OPTIONS, allowPositionals: true });
  } catch (e) {
    return (e as Error).message;
  }
  const v = p.values;
  if (v.help) return "help";
  if (p.positionals.length > 0) return `unexpected '${p.positionals[0]}': put the command after '--'.`;
  const command = dash < 0 ? undefined : argv.slice(dash + 1);
  if (command !== undefined && command.length === 0) return "no command after '--'.";
  let pid: number | undefined;
  if (v.pid !== undefined) {
    if (!/^[1-9]\d{0,9}$/.test(v.pid)) return `--pid: not a process id: ${v.pid}.`;
    pid = Number(v.pid);
  }
  if ((pid === undefined) === (command === undefined)) {
    return pid === undefined
      ? "give a command after '--' or a process with --pid."
      : "give --pid or a command, not both.";
  }
  let duration: number | undefined;
  if (v.duration !== undefined) {
    if (pid === undefined) return "--duration goes with --pid (a command is recorded until it ends).";
    if (!/^\d+(\.\d+)?$/.test(v.duration) || Number(v.duration) <= 0) {
      return `--duration: want seconds, not ${v.duration}.`;
    }
    duration = Number(v.duration);
  }
  const aux = v["aux-size"];
  if (aux !== undefined && !/^[1-9]\d*[BKMG]?$/i.test(aux))
    return `--aux-size: want a size like 4M or 65536, not ${aux}.`;
  const timing = v.timing;
  if (timing !== undefined && !(timing in TIMING_PRESETS)) {
    return `--timing: want ${Object.keys(TIMING_PRESETS).join(", ")}, not ${timing}.`;
  }
  const snapshot = v.snapshot ?? false;
  return {
    command,
    pid,
    duration,
    output: v.output ?? "perf.data",
    // Neither given: user space only, which needs no privileges.
    user: v.user ?? !v.kernel,
    kernel: v.kernel ?? false,
    snapshot,
    auxSize: aux ?? (snapshot ? DEFAULT_SNAPSHOT_AUX : undefined),
    timing: timing as TimingPreset | undefined,
    decode: !v["no-decode"],
    dryRun: v["dry-run"] ?? false,
    perf: v.perf ?? "perf",
  };
}

/** The intel_pt event: config terms of the timing preset, and u/k modifiers. */
export function intelPtEvent(args: RecordArgs): string {
  const terms = args.timing === undefined ? "" : TIMING_PRESETS[args.timing].terms;
  const modifiers = args.user && args.kernel ? "" : args.user ? "u" : "k";
  return `intel_pt/${terms}/${modifiers}`;
}

/** The perf command line (program first). */
export function perfRecordArgv(args: RecordArgs): string[] {
  const argv = [args.perf, "record", "-e", intelPtEvent(args)];
  if (args.snapshot) argv.push("--snapshot=e");
  if (args.auxSize !== undefined) argv.push(`-m,${args.auxSize}`);
  argv.push("-o", args.output);
  if (args.pid !== undefined) {
    argv.push("-p", String(args.pid));
    if (args.duration !== undefined) argv.push("--", "sleep", String(args.duration));
  } else argv.push("--", ...args.command!);
  return argv;
}

/** A command line as a POSIX shell would need it typed. */
export function shellLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(" ");
}

/**
 * `ptkit record`: `perf record -e intel_pt//` with sensible defaults around a command
 * or a running process, then `ptkit perf` on what it wrote. Where the processor or
 * kernel has no Intel PT it says what it checked and what to do instead.
 */
import { spawnSync } from "node:child_process";
import { constants } from "node:os";
import type { SessionIo } from "../../session/io.js";
import { runPerf } from "../perf/perf.js";
import {
  DEFAULT_SNAPSHOT_AUX,
  parseRecordArgs,
  perfRecordArgv,
  type RecordArgs,
  shellLine,
  TIMING_PRESETS,
} from "./options.js";

const HELP = `usage: ptkit record [<options>] -- <command> [<argument>...]
       ptkit record [<options>] --pid <pid> [--duration <seconds>]

Record the Intel PT of a command, or of a running process, with perf record
(Linux, an Intel processor with Intel PT and the kernel's intel_pt PMU), then
decode it with 'ptkit perf'. By default user-space code is traced in full (a
trace of everything the program runs) with perf's default timing packets.

options:
  -o, --output <file>    the perf.data file to write (default: perf.data).
  -p, --pid <pid>        attach to a running process instead of a command.
  --duration <seconds>   with --pid: stop after this long (else at Ctrl-C).
  -u, --user             trace user space (the default).
  -k, --kernel           trace the kernel (root or perf_event_paranoid < 1;
                         both -u and -k: both). Decoding kernel code needs a
                         copy of /proc/kcore: see ptkit perf --kcore.
  -S, --snapshot         keep the latest trace in a ring buffer instead, and
                         write it when perf gets SIGUSR2 and when it exits.
  --aux-size <size>      the trace buffer per CPU, e.g. 64K, 16M (snapshot
                         default: ${DEFAULT_SNAPSHOT_AUX}; else perf's: 4M privileged, 128K not).
  --timing <preset>      timing packets (perf's config terms in brackets):
${Object.entries(TIMING_PRESETS)
  .map(([name, p]) => `                           ${name.padEnd(7)}${p.what} [${p.terms}]`)
  .join("\n")}
                         default: perf's own [tsc,mtc,mtc_period=3].
  --no-decode            only record.
  -n, --dry-run          print the perf command line and stop.
  --perf <path>          the perf program (default: perf from PATH).
  -h, --help             this text.

examples:
  ptkit record -- ./prog arg1 arg2
  ptkit record --timing cycle -o prog.data -- ./prog
  ptkit record -S --aux-size 16M -p 4242 --duration 10
  ptkit record -u -k --no-decode -- /bin/ls
  ptkit record --dry-run -- ./prog
`;

/** What record needs from the machine; tests replace it. */
export interface RecordEnv {
  /** Where sysfs is mounted (the intel_pt PMU is under bus/event_source/devices). */
  sysfs: string;
  /** /proc/cpuinfo, for naming the processor when there is no Intel PT. */
  cpuinfo: string;
  /** Runs a program in `cwd` with the terminal's stdio; its exit status, or an error message when it cannot start. */
  spawn: (argv: readonly string[], cwd: string) => number | string;
}

export function nodeRecordEnv(): RecordEnv {
  return {
    sysfs: process.env.PTKIT_SYSFS ?? "/sys",
    cpuinfo: "/proc/cpuinfo",
    spawn: (argv, cwd) => {
      // Ctrl-C is how a recording of --pid ends: it is for perf, not for us.
      const ignore = () => {};
      process.on("SIGINT", ignore);
      try {
        const r = spawnSync(argv[0]!, argv.slice(1), { stdio: "inherit", cwd });
        if (r.error) return r.error.message;
        if (r.status !== null) return r.status;
        return 128 + (r.signal ? constants.signals[r.signal] : 0); // as a shell reports a signal
      } finally {
        process.off("SIGINT", ignore);
      }
    },
  };
}

function readText(io: SessionIo, path: string): string | undefined {
  try {
    return new TextDecoder().decode(io.readFile(path)).trim();
  } catch {
    return undefined;
  }
}

/** Why Intel PT cannot be used here (what was checked and what to do), or undefined. */
function noIntelPt(io: SessionIo, env: RecordEnv): string | undefined {
  const pmu = `${env.sysfs}/bus/event_source/devices/intel_pt`;
  if (readText(io, `${pmu}/type`) !== undefined) return undefined;
  const cpuinfo = readText(io, env.cpuinfo) ?? "";
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1];
  const vendor = /^vendor_id\s*:\s*(.+)$/m.exec(cpuinfo)?.[1];
  const cpu = model ? ` (this processor: ${model}${vendor ? `, ${vendor}` : ""})` : "";
  return [
    `no Intel PT here: ${pmu} does not exist, so the kernel offers no intel_pt PMU${cpu}.`,
    "Intel PT needs an Intel processor from Broadwell (2014) on, Linux 4.1 or later built with",
    "CONFIG_PERF_EVENTS_INTEL_PT (the intel_pt PMU), and in a virtual machine a hypervisor that",
    "passes Intel PT through. AMD processors have no Intel PT.",
    "What you can do here: decode a perf.data recorded elsewhere ('ptkit perf perf.data'), or",
    "make a trace without the hardware ('ptkit simulate -o prog.pt -- ./prog').",
  ].join("\n");
}

/** A capability the timing preset needs that the PMU says it lacks, or undefined. */
function missingCapability(io: SessionIo, env: RecordEnv, args: RecordArgs): string | undefined {
  const caps = `${env.sysfs}/bus/event_source/devices/intel_pt/caps`;
  const needs: [string, string][] = [];
  if (args.timing === "fine" || args.timing === "cycle") needs.push(["mtc", "MTC packets"]);
  if (args.timing === "cycle") needs.push(["psb_cyc", "CYC packets"]);
  for (const [cap, what] of needs) {
    if (readText(io, `${caps}/${cap}`) === "0") {
      return `--timing ${args.timing} needs ${what}, which this processor lacks (${caps}/${cap} is 0); try --timing coarse.`;
    }
  }
  return undefined;
}

export function runRecord(argv: readonly string[], io: SessionIo, env: RecordEnv = nodeRecordEnv()): number {
  const args = parseRecordArgs(argv);
  if (args === "help") {
    io.stdout(HELP);
    return 0;
  }
  if (typeof args === "string") {
    io.stderr(`ptkit record: ${args}\n\n${HELP}`);
    return 1;
  }
  const perfArgv = perfRecordArgv(args);
  const problem = noIntelPt(io, env) ?? missingCapability(io, env, args);
  if (args.dryRun) {
    io.stdout(`${shellLine(perfArgv)}\n`);
    if (problem !== undefined)
      io.stderr(`ptkit record: note: it would fail here: ${problem.split("\n")[0]}\n`);
    return 0;
  }
  if (problem !== undefined) {
    io.stderr(`ptkit record: ${problem}\n`);
    return 2;
  }
  const version = env.spawn([args.perf, "--version"], io.cwd);
  if (version !== 0) {
    io.stderr(
      `ptkit record: cannot run ${args.perf}${typeof version === "string" ? ` (${version})` : ` (exit status ${version})`}.\n` +
        "Install perf (Debian: linux-perf; Ubuntu: linux-tools-$(uname -r); Fedora: perf) or name it with --perf.\n",
    );
    return 2;
  }
  io.stderr(`ptkit record: ${shellLine(perfArgv)}\n`);
  const status = env.spawn(perfArgv, io.cwd);
  let written = true;
  try {
    io.fileSize(args.output);
  } catch {
    written = false;
  }
  if (typeof status === "string" || !written) {
    io.stderr(
      `ptkit record: perf record failed (${typeof status === "string" ? status : `exit status ${status}`}) and wrote no ${args.output}.\n` +
        "If it says 'Permission denied': trace user space only (-u), or lower /proc/sys/kernel/perf_event_paranoid, or run as root.\n",
    );
    return 1;
  }
  if (status !== 0)
    io.stderr(`ptkit record: perf record ended with exit status ${status}; decoding what it wrote.\n`);
  if (!args.decode) return 0;
  return runPerf([args.output], io);
}

/**
 * Whole-process comparisons: each ptkit command run as a process (`node
 * dist/cli/ptkit.js ...`, the bundled executable), start-up, file reading, image loading and all, against
 * the peer's equivalent process (the libipt harness, tools/libipt/harness.c, in its
 * one-pass modes: `--bench 0` packet decoding, `--bench-flow 0 block|insn` flow
 * decoding like ptxed --quiet; Linux perf's `perf script` and `perf report` for
 * `ptkit perf`). The micro-benchmarks time decoding loops in a warm process; these
 * time what a user waits for.
 *
 * Each pair runs once untimed (page cache), then alternates ptkit, peer, ptkit, peer
 * for `runs` rounds, so that load on the machine falls on both alike; the table has
 * medians of wall time and of CPU time (user + system, the child's, from
 * /proc/self/stat's cutime and cstime: Linux only, clock-tick resolution, usually
 * 10 ms) and ratios peer / ptkit (> 1: ptkit is faster). Each pair's outputs must
 * agree (packet or instruction counts, byte for byte where both print the same, or
 * at least both print something) or the benchmark fails. Big outputs go to files
 * ({@link Command.stdoutFile}), as a user would redirect them.
 *
 * ptkit runs without the decision graphs it keeps between runs (PTKIT_CACHE_DIR=off:
 * every row times a first run over its code) unless a pair asks for them
 * ({@link keptGraphs}: the rows of a user's later runs over the same binaries, whose
 * untimed first run makes the graphs).
 */
import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, readSync, rmSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { fmt, fmtInt, table } from "./format.js";
import { CACHE_DIR, REPO_ROOT } from "./paths.js";

/** One command line. */
export interface Command {
  argv: string[];
  /** The count its output shows (packets, instructions), or why it failed. */
  count: (stdout: string) => number | undefined;
  /** Environment variables to set (e.g. HOME for perf's build-id cache). */
  env?: Record<string, string>;
  /** Where its standard output goes (then `count` gets "" and reads the file): big outputs. */
  stdoutFile?: string;
}

export interface Pair {
  what: string;
  workload: string;
  ptkit: Command;
  peer: Command;
  /** What the count is, for the report ("packets", "instructions"); none: exit status only. */
  counted?: string;
  /** Bytes of trace each command decodes: the report gives MB/s. */
  bytes?: { ptkit: number; peer: number };
  /** Both write their standard output to files that must be byte-identical. */
  identical?: boolean;
  /** Both must count something (not 0): they print different things, but both print. */
  nonEmpty?: boolean;
}

export interface ProcStats {
  command: string;
  wallMs: number[];
  /** User + system CPU time per run; empty where /proc/self/stat is not there. */
  cpuMs: number[];
  medianWallMs: number;
  medianCpuMs: number | undefined;
  count: number | undefined;
}

export interface WholeRow {
  what: string;
  workload: string;
  ptkit: ProcStats;
  peer: ProcStats;
  /** Bytes of trace each decodes, when the pair has them. */
  bytes?: { ptkit: number; peer: number };
  /** Peer time / ptkit time: > 1 means ptkit is faster. */
  wallRatio: number;
  cpuRatio: number | undefined;
}

export interface WholeBench {
  runs: number;
  /** Load averages (1, 5, 15 minutes) before and after. */
  loadBefore: number[];
  loadAfter: number[];
  rows: WholeRow[];
  problems: string[];
}

/** The node binary and ptkit's CLI, as `ptkit` runs after `npm run build` (package.json's bin). */
/** Where the rows of later runs keep ptkit's decision graphs (emptied when the comparison starts). */
export const GRAPH_CACHE = join(CACHE_DIR, "graph-cache");

/** `cmd` (ptkit's) with the decision graphs of earlier runs: a later run's row. */
export function keptGraphs(cmd: Command): Command {
  return { ...cmd, env: { ...cmd.env, PTKIT_CACHE_DIR: GRAPH_CACHE } };
}

export function ptkitArgv(...args: string[]): string[] {
  return [process.execPath, join(REPO_ROOT, "dist", "cli", "ptkit.js"), ...args];
}

const CLK_TCK = clockTicks();

function clockTicks(): number {
  const r = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const n = Number(r.stdout?.trim());
  return r.status === 0 && n > 0 ? n : 100;
}

/** CPU time of this process's waited-for children so far, in ms; undefined off Linux. */
function childrenCpuMs(): number | undefined {
  if (!existsSync("/proc/self/stat")) return undefined;
  const stat = readFileSync("/proc/self/stat", "utf8");
  // Fields after the command name (which may hold spaces) in parentheses: cutime and cstime are 16 and 17.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK;
}

interface Run {
  wallMs: number;
  cpuMs: number | undefined;
  stdout: string;
}

function runOnce(cmd: Command): Run | string {
  const { argv } = cmd;
  const fd = cmd.stdoutFile === undefined ? undefined : openSync(cmd.stdoutFile, "w");
  const cpu0 = childrenCpuMs();
  const t0 = process.hrtime.bigint();
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: "utf8",
    maxBuffer: 1 << 26,
    env: { ...process.env, PTKIT_CACHE_DIR: "off", ...cmd.env },
    stdio: ["ignore", fd ?? "pipe", "pipe"],
  });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu1 = childrenCpuMs();
  if (fd !== undefined) closeSync(fd);
  if (r.error || r.status !== 0) {
    const why = (r.stderr || String(r.error ?? `exit status ${r.status}`))
      .trim()
      .split("\n")
      .slice(-2)
      .join(" | ");
    return `${shown(argv)} failed: ${why}`;
  }
  return {
    wallMs,
    cpuMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0,
    stdout: r.stdout ?? "",
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** A command line as shown in the report: paths relative to the repository, node as `node`. */
export function shown(argv: string[]): string {
  return argv.map((a) => (a === process.execPath ? "node" : a.split(`${REPO_ROOT}/`).join(""))).join(" ");
}

function stats(cmd: Command, runs: Run[]): ProcStats {
  const cpu = runs.map((r) => r.cpuMs).filter((c): c is number => c !== undefined);
  return {
    command: shown(cmd.argv),
    wallMs: runs.map((r) => r.wallMs),
    cpuMs: cpu,
    medianWallMs: median(runs.map((r) => r.wallMs)),
    medianCpuMs: cpu.length === runs.length ? median(cpu) : undefined,
    count: cmd.count(runs[0]!.stdout),
  };
}

/** Time one pair, A B A B; a row, or a problem. */
function measurePair(p: Pair, runs: number): WholeRow | string {
  const a: Run[] = [];
  const b: Run[] = [];
  for (let i = -1; i < runs; i++) {
    for (const [cmd, out] of [
      [p.ptkit, a],
      [p.peer, b],
    ] as const) {
      const r = runOnce(cmd);
      if (typeof r === "string") return `${p.what} on ${p.workload}: ${r}`;
      if (i >= 0) out.push(r);
    }
  }
  const ptkit = stats(p.ptkit, a);
  const peer = stats(p.peer, b);
  if (p.counted && (ptkit.count === undefined || ptkit.count !== peer.count))
    return `${p.what} on ${p.workload}: ptkit counted ${ptkit.count} ${p.counted}, the peer ${peer.count}`;
  if (p.nonEmpty && !(ptkit.count! > 0 && peer.count! > 0))
    return `${p.what} on ${p.workload}: ptkit counted ${ptkit.count}, the peer ${peer.count}: not both printed`;
  if (p.identical) {
    const differ = firstDifference(p.ptkit.stdoutFile!, p.peer.stdoutFile!);
    if (differ !== undefined) return `${p.what} on ${p.workload}: the outputs differ at byte ${differ}`;
  }
  return {
    what: p.what,
    workload: p.workload,
    ptkit,
    peer,
    ...(p.bytes ? { bytes: p.bytes } : {}),
    wallRatio: peer.medianWallMs / ptkit.medianWallMs,
    cpuRatio:
      ptkit.medianCpuMs !== undefined && peer.medianCpuMs !== undefined && ptkit.medianCpuMs > 0
        ? peer.medianCpuMs / ptkit.medianCpuMs
        : undefined,
  };
}

/** Time every pair, `runs` rounds each. */
export function measureWhole(pairs: Pair[], runs: number): WholeBench {
  // Later runs' rows keep graphs their own first run made, not another build's.
  rmSync(GRAPH_CACHE, { recursive: true, force: true });
  const loadBefore = loadavg();
  const rows: WholeRow[] = [];
  const problems: string[] = [];
  const counts = new Map<string, number>();
  for (const p of pairs) {
    const r = measurePair(p, runs);
    if (typeof r === "string") problems.push(r);
    else rows.push(r);
    // Every decoder of a workload, block or instruction, ptkit or libipt, counts the same instructions.
    if (typeof r === "string" || p.counted !== "instructions") continue;
    const seen = counts.get(r.workload);
    if (seen === undefined) counts.set(r.workload, r.ptkit.count!);
    else if (seen !== r.ptkit.count)
      problems.push(`${r.what} on ${r.workload}: ${r.ptkit.count} instructions, the first decoder ${seen}`);
  }
  return { runs, loadBefore, loadAfter: loadavg(), rows, problems };
}

/** The offset of the first byte where two files differ (or one ends), undefined if they are the same. */
export function firstDifference(a: string, b: string): number | undefined {
  const fa = openSync(a, "r");
  const fb = openSync(b, "r");
  try {
    const ba = new Uint8Array(1 << 20);
    const bb = new Uint8Array(1 << 20);
    for (let at = 0; ; ) {
      const na = readSync(fa, ba, 0, ba.length, at);
      const nb = readSync(fb, bb, 0, bb.length, at);
      const n = Math.min(na, nb);
      for (let i = 0; i < n; i++) if (ba[i] !== bb[i]) return at + i;
      if (na !== nb) return at + n;
      if (na === 0) return undefined;
      at += n;
    }
  } finally {
    closeSync(fa);
    closeSync(fb);
  }
}

/** Lines of a file for which `keep` holds, read a chunk at a time (outputs of hundreds of MB). */
export function countFileLines(path: string, keep: (line: string) => boolean = () => true): number {
  const fd = openSync(path, "r");
  const buf = Buffer.alloc(1 << 20);
  let n = 0;
  let rest = "";
  try {
    for (let got = readSync(fd, buf); got > 0; got = readSync(fd, buf)) {
      const lines = (rest + buf.toString("latin1", 0, got)).split("\n");
      rest = lines.pop()!;
      for (const l of lines) if (keep(l)) n++;
    }
  } finally {
    closeSync(fd);
  }
  return rest !== "" && keep(rest) ? n + 1 : n;
}

/* Output parsers. */

/** `ptkit stats`: the `packets N` line. */
export const statsPackets = (out: string) => numberAfter(out, /^packets\s+(\d+)/m);
/** `ptkit flow --stat`: the `insn: N.` line. */
export const flowInsns = (out: string) => numberAfter(out, /^insn:\s+(\d+)\./m);
/** The harness's JSON line: `packets` (--bench) or `insns` (--bench-flow). */
export const harnessField = (field: "packets" | "insns") => (out: string) => {
  try {
    const n = (JSON.parse(out) as Record<string, unknown>)[field];
    return typeof n === "number" ? n : undefined;
  } catch {
    return undefined;
  }
};
/** A command whose output is not counted (exit status only). */
export const uncounted = () => undefined;

function numberAfter(out: string, re: RegExp): number | undefined {
  const m = re.exec(out);
  return m ? Number(m[1]) : undefined;
}

/** The comparison as a table, and any problems. */
export function wholeReport(w: WholeBench): string[] {
  const ms = (n: number | undefined) => (n === undefined ? "-" : fmt(n, 0));
  const x = (n: number | undefined) => (n === undefined ? "-" : `${fmt(n, 2)}x`);
  const rows = [
    ["comparison", "workload", "ptkit wall", "cpu", "peer wall", "cpu", "wall ratio", "cpu ratio", "count"],
  ];
  for (const r of w.rows)
    rows.push([
      r.what,
      r.workload,
      ms(r.ptkit.medianWallMs),
      ms(r.ptkit.medianCpuMs),
      ms(r.peer.medianWallMs),
      ms(r.peer.medianCpuMs),
      x(r.wallRatio),
      x(r.cpuRatio),
      r.ptkit.count === undefined ? "-" : fmtInt(r.ptkit.count),
    ]);
  const load = (l: number[]) => l.map((n) => fmt(n, 2)).join(" ");
  const mbs = (bytes: number, ms: number | undefined) => (ms ? fmt(bytes / 1e3 / ms, 1) : "-");
  const rates = w.rows.flatMap((r) =>
    r.bytes
      ? [
          `         ${r.what} on ${r.workload}, MB/s of trace (wall, cpu): ` +
            `ptkit ${mbs(r.bytes.ptkit, r.ptkit.medianWallMs)}, ${mbs(r.bytes.ptkit, r.ptkit.medianCpuMs)}; ` +
            `peer ${mbs(r.bytes.peer, r.peer.medianWallMs)}, ${mbs(r.bytes.peer, r.peer.medianCpuMs)}`,
        ]
      : [],
  );
  return [
    `whole processes: medians of ${w.runs} alternating runs, ms (cpu = user + sys); ratio = peer / ptkit, > 1: ptkit faster`,
    `         load average ${load(w.loadBefore)} before, ${load(w.loadAfter)} after (${availableParallelism()} CPUs)`,
    table(rows, [2, 3, 4, 5, 6, 7, 8]),
    ...rates,
    "         commands:",
    ...[...new Set(w.rows.flatMap((r) => [r.ptkit.command, r.peer.command]))].map((c) => `         ${c}`),
  ];
}

/**
 * `ptkit perf`'s frame names are per process: two programs at the same address
 * (non-PIE, 0x400000) with different symbols, one on CPU 0 and one on CPU 1, each
 * get their own function names in the timeline and the folded stacks; the first
 * process then execs a third program at the same address, whose frames (on CPU 2,
 * later) get the new program's names: the exec ends the old program's frames (once,
 * though every CPU's stream replays the sideband) and the new one starts a new root.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { tryParseElf } from "../../src/image/index.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { fileMode, Le, record } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, TRACE_TSC, trailer } from "../../tools/perf/pt-file.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { EMPTY_HOME } from "./home.js";
import { loopProgram } from "./pt-file.js";

const BASE = 0x400000n;

/** A user-only trace (branches, TSC, MTC, CYC) of an execution, starting at TSC `tsc`. */
function userTrace(exec: readonly string[], tsc: bigint): Uint8Array {
  const ctl = { ...BRANCHES, OS: 0, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 0 };
  return generate(readExecJsonl(`${[JSON.stringify({ k: "cpl", cpl: 3 }), ...exec].join("\n")}\n`), {
    msrs: msrs({ ctl }),
    cyclesPerInsn: 3,
    tsc,
  }).bytes;
}

/** SWITCH_CPU_WIDE: thread `pid` comes onto (`out`: leaves) `cpu` at `time`; the idle task was (is) the other. */
const switchCpuWide = (out: boolean, pid: number, time: bigint, cpu: number) =>
  record(
    15,
    out ? 1 << 13 : 0,
    new Le()
      .u32(0)
      .u32(0)
      .raw(trailer(pid, pid, time, cpu, 10)),
  );

/** A timeline event (only the fields looked at). */
interface TraceEvent {
  ph: string;
  pid: number;
  name: string;
  cat: string;
  ts: number;
  dur: number;
  args?: { end?: string };
}

/** A program written to the test's directory: its recorded path, file offset of its code and execution. */
interface Program {
  path: string;
  pgoff: bigint;
  exec: string[];
}

/** The loop program (main at BASE, f at BASE + 0x10) written to `dir` as `p` with names main_p and f_p, `runs[p]` turns. */
function loopPrograms<K extends string>(dir: string, runs: Record<K, number>): Record<K, Program> {
  return Object.fromEntries(
    Object.entries<number>(runs).map(([p, n]) => {
      const { code, exec } = loopProgram(BASE, n);
      const elf = elfWithSymbols(BASE, code, [
        { name: `main_${p}`, value: BASE, size: 0x10 },
        { name: `f_${p}`, value: BASE + 0x10n, size: 1 },
      ]);
      writeFileSync(join(dir, p), elf);
      const parsed = tryParseElf(elf);
      assert.ok(!(parsed instanceof Error));
      return [p, { path: `/bin/${p}`, pgoff: BigInt(parsed.loads[0]!.offset), exec }];
    }),
  ) as Record<K, Program>;
}

/** Run ptkit perf on `file` with --timeline and --folded (names from the programs `elfs`): the timeline's events and the folded lines. */
function timelineAndFolded(dir: string, file: PtFile, elfs: readonly string[]) {
  writeFileSync(join(dir, "perf.data"), fileMode(file.built()));
  const io = captureIo(dir);
  const args = [...elfs.flatMap((e) => ["--elf", e]), "--timeline", "t.json", "--folded", "f.folded", "-q"];
  const code = runPerf([...args, "perf.data"], io, EMPTY_HOME);
  assert.equal(code, 0, io.err.join(""));
  assert.equal(io.err.join(""), "");
  const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as { traceEvents: TraceEvent[] };
  const folded = readFileSync(join(dir, "f.folded"), "utf8").trim().split("\n");
  return { events: doc.traceEvents, folded };
}

/** Each frame kind and name of process `pid`, with its count. */
function frames(events: readonly TraceEvent[], pid: number): string[] {
  const names = timelineFrames(events)
    .filter((e) => e.pid === pid)
    .map((e) => `${e.cat} ${e.name}`);
  return [...new Set(names)].sort().map((k) => `${k} ${names.filter((x) => x === k).length}`);
}

/** A timeline time (µs) in whole nanoseconds. */
const ns = (us: number) => Math.round(us * 1000);

/** The frames that ended "exec": pid, name and end time (ns from the first TSC, one tick a nanosecond here). */
const execEnded = (events: readonly TraceEvent[]) =>
  timelineFrames(events)
    .filter((e) => e.end === "exec")
    .map((e) => `${e.pid} ${e.name} ${e.stopNs}`)
    .sort();

test("two programs at one address, and an exec: each process's frames carry its own names", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-frame-names-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runs = { a: 300, b: 200, c: 100 };
  const { a, b, c } = loopPrograms(dir, runs) as Record<
    "a" | "b" | "c",
    ReturnType<typeof loopPrograms>[string]
  >;
  const later = TRACE_TSC + 0x10000000n;
  const execAt = later - 0x180000n;
  const file = new PtFile()
    .comm(100, "proc-a", TRACE_TSC - 100n)
    .comm(200, "proc-b", TRACE_TSC - 90n, 1)
    .mmap2(100, BASE, 0x1000n, a.pgoff, a.path, TRACE_TSC - 50n)
    .mmap2(200, BASE, 0x1000n, b.pgoff, b.path, TRACE_TSC - 40n)
    // Process 100 execs program c (COMM with the exec flag), which maps at the same address.
    .comm(100, "proc-c", execAt, 2)
    .mmap2(100, BASE, 0x1000n, c.pgoff, c.path, later - 0x170000n)
    .trace(userTrace(a.exec, TRACE_TSC), 0)
    .trace(userTrace(b.exec, TRACE_TSC), 1)
    .trace(userTrace(c.exec, later), 2);
  file.records.push(
    switchCpuWide(false, 100, TRACE_TSC - 10n, 0),
    switchCpuWide(false, 200, TRACE_TSC - 10n, 1),
    switchCpuWide(true, 100, later - 0x200000n, 0),
    switchCpuWide(false, 100, later - 0x100000n, 2),
  );
  const { events, folded } = timelineAndFolded(dir, file, ["a", "b", "c"]);
  assert.deepEqual(frames(events, 100), [
    `call f_a ${runs.a}`,
    `call f_c ${runs.c}`,
    "interrupt [interrupt] 2",
    "root main_a 1",
    "root main_c 1",
  ]);
  // A's open frames (its root and the interrupt it was in) end "exec" at the exec
  // (clock: ns from the first TSC, one tick a nanosecond); C's start after it.
  const execNs = Number(execAt - TRACE_TSC);
  assert.deepEqual(execEnded(events), [`100 [interrupt] ${execNs}`, `100 main_a ${execNs}`]);
  const mainC = timelineFrames(events).find((e) => e.name === "main_c");
  assert.ok(mainC !== undefined && ns(mainC.ts) > execNs);
  assert.deepEqual(frames(events, 200), [`call f_b ${runs.b}`, "interrupt [interrupt] 1", "root main_b 1"]);
  for (const line of [
    "proc-b;main_b 601",
    "proc-b;main_b;f_b 200",
    "proc-c;main_a 901",
    "proc-c;main_a;f_a 300",
    "proc-c;main_c 301",
    "proc-c;main_c;f_c 100",
  ])
    assert.ok(folded.includes(line), `${line} in\n${folded.join("\n")}`);
  // The exec'd program's frames are not under the frames of the program it replaced.
  assert.ok(!folded.some((l) => l.startsWith("proc-c;main_a;") && /_c\b/.test(l)), folded.join("\n"));
  for (const line of folded) {
    if (line.startsWith("proc-b;")) assert.doesNotMatch(line, /_[ac]\b/);
    else assert.doesNotMatch(line, /_b\b/);
  }
  // Every instruction is weighed: 1 + 4 turns each.
  const total = folded.reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  assert.equal(total, 3 + 4 * (runs.a + runs.b + runs.c));
});

test("an exec while the thread runs on its CPU: the old program's frames end there, the new one starts a root", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-frame-names-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runs = { a: 30, c: 20 };
  const { a, c } = loopPrograms(dir, runs);
  const later = TRACE_TSC + 0x100000n;
  const execAt = later - 0x800n;
  // One CPU, one thread that never leaves it: A's trace, then (after the exec) C's.
  const trace = [...userTrace(a.exec, TRACE_TSC), ...userTrace(c.exec, later)];
  const file = new PtFile()
    .comm(100, "proc-a", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, a.pgoff, a.path, TRACE_TSC - 50n)
    .comm(100, "proc-c", execAt)
    .mmap2(100, BASE, 0x1000n, c.pgoff, c.path, execAt + 0x100n)
    .trace(new Uint8Array(trace), 0);
  file.records.push(switchCpuWide(false, 100, TRACE_TSC - 10n, 0));
  const { events, folded } = timelineAndFolded(dir, file, ["a", "c"]);
  assert.deepEqual(frames(events, 100), [
    `call f_a ${runs.a}`,
    `call f_c ${runs.c}`,
    "interrupt [interrupt] 2",
    "root main_a 1",
    "root main_c 1",
  ]);
  const execNs = Number(execAt - TRACE_TSC);
  assert.deepEqual(execEnded(events), [`100 [interrupt] ${execNs}`, `100 main_a ${execNs}`]);
  for (const line of ["proc-c;main_a 91", "proc-c;main_a;f_a 30", "proc-c;main_c 61", "proc-c;main_c;f_c 20"])
    assert.ok(folded.includes(line), `${line} in\n${folded.join("\n")}`);
  assert.ok(!folded.some((l) => l.startsWith("proc-c;main_a;") && /_c\b/.test(l)), folded.join("\n"));
});

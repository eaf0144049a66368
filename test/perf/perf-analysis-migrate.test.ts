/**
 * `ptkit perf`'s analysis sink fed as the interleaved per-CPU streams feed it: a
 * thread that moves to another CPU keeps its call stack (a call on one CPU returns on
 * the other) and its instruction counts, even when the CPU it left shows nothing
 * more until later; the idle task and unknown threads, which run on several CPUs at
 * once, get a track per CPU; threads switched through without running traced get
 * no track. End to end: a synthetic perf.data whose thread is interrupted inside a
 * call on CPU 0 and returns from it on CPU 1 (SWITCH_CPU_WIDE records, user-only
 * trace).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { FlowClass, Insn } from "../../src/flow/index.js";
import { tryParseElf } from "../../src/image/index.js";
import type { PerfTasks } from "../../src/perf/index.js";
import type { AnalysisOptions } from "../../src/session/analysis-options.js";
import { defaultAnalysisOptions } from "../../src/session/analysis-outputs.js";
import { PerfAnalysis, ThreadNames } from "../../src/session/perf-analysis.js";
import { AllProcessSymbols } from "../../src/session/perf-frame-symbols.js";
import type { PerfWhere } from "../../src/session/perf-stream.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, switchCpuWide, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { insn as execInsn } from "./pt-file.js";

function insn(lo: number, iclass: number = FlowClass.Other, size = 1): Insn {
  const i = new Insn();
  i.ipLo = lo;
  i.size = size;
  i.iclass = iclass as Insn["iclass"];
  return i;
}

/** The idle task's track on CPU 0 (tid 2^22 + cpu: no Linux thread has it). */
const IDLE = 1 << 22;

const tasks: PerfTasks = {
  changes: [],
  switches: [],
  hasSwitchRecords: true,
  seen: [],
  gaps: [],
  conversion: undefined,
  problems: [],
  buildIds: new Map(),
};

/**
 * `ptkit perf`'s analysis with `outputs` written to a temporary directory, fed as the
 * interleaved per-CPU streams feed it: two CPUs at TSC 100 running pid 0, and `at`
 * to switch a CPU to another thread at a TSC.
 */
function twoCpus(t: TestContext, outputs: Partial<AnalysisOptions>) {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-migrate-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const options = { ...defaultAnalysisOptions(), ...outputs };
  const analysis = PerfAnalysis.open(
    captureIo(dir),
    options,
    new ThreadNames(),
    tasks,
    new AllProcessSymbols(),
    1,
  );
  assert.ok(analysis instanceof PerfAnalysis);
  const sink = analysis.sink;
  const cpu0: PerfWhere = { cpu: 0, pid: 0, tid: 0, tscHi: 0, tscLo: 100, inRange: true };
  const cpu1: PerfWhere = { cpu: 1, pid: 0, tid: 0, tscHi: 0, tscLo: 100, inRange: true };
  const at = (w: PerfWhere, pid: number, tsc: number) => {
    Object.assign(w, { pid, tid: pid, tscLo: tsc });
    sink.switched(w);
  };
  return { dir, analysis, sink, cpu0, cpu1, at };
}

test("a thread moving between CPUs keeps one stack; idle gets a track per CPU", (t) => {
  const { dir, analysis, sink, cpu0, cpu1, at } = twoCpus(t, { timeline: "t.json", folded: "f.folded" });
  // Both CPUs idle at once.
  sink.insn(cpu0, insn(0x9000));
  sink.insn(cpu1, insn(0x9000));
  // Thread 10 runs on CPU 0 and calls 0x2000.
  at(cpu0, 10, 110);
  sink.insn(cpu0, insn(0x1000, FlowClass.Call, 5));
  for (let i = 0; i < 40; i++) sink.insn(cpu0, insn(0x2000));
  // It leaves CPU 0 (thread 30 comes, then 40, neither traced before CPU 0's next
  // instruction) and CPU 1 takes it up; CPU 1 moves its clock on before CPU 0 does.
  at(cpu0, 30, 150);
  at(cpu0, 40, 160);
  at(cpu1, 10, 200);
  for (let i = 0; i < 7; i++) sink.insn(cpu1, insn(0x2001));
  cpu1.tscLo = 250;
  sink.insn(cpu1, insn(0x2002, FlowClass.Return));
  sink.insn(cpu1, insn(0x1005));
  cpu0.tscLo = 300;
  sink.insn(cpu0, insn(0x5000));
  const { error, summary } = analysis.finish();
  assert.equal(error, undefined);
  assert.equal(summary, "wrote t.json, f.folded: 53 instructions, 1 call, 4 threads in 3 processes");
  const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as {
    traceEvents: {
      ph: string;
      pid: number;
      tid: number;
      name: string;
      args?: { name?: string; end?: string };
    }[];
  };
  const threads = doc.traceEvents
    .filter((e) => e.ph === "M" && e.name === "thread_name")
    .map((e) => `${e.pid}/${e.tid} ${e.args?.name}`);
  assert.deepEqual(threads.sort(), [
    `0/${IDLE} swapper/0`,
    `0/${IDLE + 1} swapper/1`,
    "10/10 10",
    "40/40 40",
  ]);
  const frames = timelineFrames(doc.traceEvents).map(
    (e) => `${e.pid}/${e.tid} ${e.name} ${e.end ?? "return"}`,
  );
  assert.deepEqual(frames.sort(), [
    `0/${IDLE} 0x9000 end`,
    `0/${IDLE + 1} 0x9000 end`,
    "10/10 0x1000 end",
    "10/10 0x2000 return",
    "40/40 0x5000 end",
  ]);
  // Thread 10: 2 instructions in its root, 48 in the callee (40 on CPU 0, 8 on CPU 1).
  assert.deepEqual(readFileSync(join(dir, "f.folded"), "utf8").trim().split("\n").sort(), [
    "0x1000 2",
    "0x1000;0x2000 48",
    "0x5000 1",
    "swapper/0;0x9000 1",
    "swapper/1;0x9000 1",
  ]);
});

const BASE = 0x400000n;
const KERNEL = 0xffffffff81000000n;
// mov ecx, n; l: call f; dec ecx; jnz l; hlt; f: ret
const CODE = Uint8Array.from([0xb9, 0, 0, 1, 0, 0xe8, 6, 0, 0, 0, 0xff, 0xc9, 0x75, 0xf7, 0xf4, 0, 0xc3]);
const hex = (v: bigint) => `0x${v.toString(16)}`;
const turns = (n: number) =>
  Array.from({ length: n }, () => [
    execInsn(BASE + 5n, 5, "call"),
    execInsn(BASE + 0x10n, 1, "return"),
    execInsn(BASE + 0xan, 2),
    execInsn(BASE + 0xcn, 2, "cond-branch"),
  ]).flat();

/** A user-only trace (branches, TSC, MTC, CYC) of an execution, starting at TSC `tsc`. */
function userTrace(exec: string[], tsc: bigint): Uint8Array {
  const ctl = { ...BRANCHES, OS: 0, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 0 };
  return generate(readExecJsonl(`${exec.join("\n")}\n`), { msrs: msrs({ ctl }), cyclesPerInsn: 3, tsc })
    .bytes;
}

/**
 * How CPU 1's trace takes the thread up: the untraced kernel returns into f (TIP.PGE at
 * f), or the trace starts inside f (PSB+ with tracing on, no TIP.PGE: perf's AUX data
 * of that CPU starts there).
 */
const TAKE_UP: Record<string, string[]> = {
  "TIP.PGE": [
    JSON.stringify({ k: "cpl", cpl: 0 }),
    execInsn(KERNEL + 3n, 2, "iret"),
    JSON.stringify({ k: "cpl", cpl: 3 }),
  ],
  "PSB+ without TIP.PGE": [JSON.stringify({ k: "cpl", cpl: 3 })],
};

/** Call f, interrupted in f by the (untraced) kernel, which runs until the trace ends. */
const LEAVE_IN_F = [
  execInsn(BASE + 5n, 5, "call"),
  JSON.stringify({ k: "interrupt", vector: 32, from: hex(BASE + 0x10n), to: hex(KERNEL) }),
  JSON.stringify({ k: "cpl", cpl: 0 }),
  execInsn(KERNEL, 3),
  JSON.stringify({ k: "end", ip: hex(KERNEL + 3n) }),
];

/** The program `mig` (main_a's loop calling f) in a temporary directory: the directory and its code's file offset. */
function migProgram(t: TestContext): { dir: string; offset: bigint } {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-migrate-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const elf = elfWithSymbols(BASE, CODE, [
    { name: "main_a", value: BASE, size: 0x10 },
    { name: "f", value: BASE + 0x10n, size: 1 },
  ]);
  writeFileSync(join(dir, "mig"), elf);
  const loads = tryParseElf(elf);
  assert.ok(!(loads instanceof Error));
  return { dir, offset: BigInt(loads.loads[0]!.offset) };
}

for (const [how, takeUp] of Object.entries(TAKE_UP))
  test(`end to end: a call on CPU 0 returns on CPU 1 (taken up at ${how})`, (t) => endToEnd(t, takeUp));

function endToEnd(t: TestContext, takeUp: string[]): void {
  const { dir, offset } = migProgram(t);
  // CPU 0: 300 turns, then call f, interrupted in f (the kernel is not traced).
  const cpu0 = [JSON.stringify({ k: "cpl", cpl: 3 }), execInsn(BASE, 5), ...turns(300), ...LEAVE_IN_F];
  // CPU 1, much later: the thread goes on in f, which returns; 200 more turns.
  const cpu1 = [
    ...takeUp,
    execInsn(BASE + 0x10n, 1, "return"),
    execInsn(BASE + 0xan, 2),
    execInsn(BASE + 0xcn, 2, "cond-branch"),
    ...turns(200),
    JSON.stringify({ k: "end", ip: hex(BASE + 0xen) }),
  ];
  const later = TRACE_TSC + 0x10000000n;
  const file = new PtFile()
    .comm(100, "mig", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, offset, "/bin/mig", TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(userTrace(cpu0, TRACE_TSC), 0)
    .trace(userTrace(cpu1, later), 1);
  file.records.push(
    switchCpuWide(true, 100, 0, later - 0x200000n, 0),
    switchCpuWide(false, 100, 0, later - 0x100000n, 1),
  );
  writeFileSync(join(dir, "perf.data"), fileMode(file.built()));
  const io = captureIo(dir);
  const code = runPerf(
    ["--elf", "mig", "--timeline", "t.json", "--folded", "f.folded", "-q", "perf.data"],
    io,
    "/x",
  );
  assert.equal(code, 0, io.err.join(""));
  assert.equal(io.err.join(""), "");
  // 1 + 4 * 300 + 1 on CPU 0, 3 + 4 * 200 on CPU 1.
  const insns = 1 + 4 * 300 + 1 + 3 + 4 * 200;
  assert.deepEqual(io.out, [
    `wrote t.json, f.folded: ${insns} instructions, 501 calls, 2 threads in 2 processes\n`,
  ]);
  const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as {
    traceEvents: {
      ph: string;
      pid: number;
      tid: number;
      name: string;
      cat: string;
      args?: { end?: string };
    }[];
  };
  const frames = timelineFrames(doc.traceEvents)
    .filter((e) => e.pid === 100)
    .map((e) => `${e.cat} ${e.name} ${e.end ?? "return"}`);
  const counts = [...new Set(frames)].sort().map((k) => `${k} ${frames.filter((x) => x === k).length}`);
  // Every call of f returns, the one interrupted on CPU 0 on CPU 1; the untraced
  // interrupt returns where f resumes; the trace's asynchronous end is one more.
  assert.deepEqual(counts, [
    "call f return 501",
    "interrupt [interrupt] end 1",
    "interrupt [interrupt] return 1",
    "root main_a end 1",
  ]);
  assert.deepEqual(readFileSync(join(dir, "f.folded"), "utf8").trim().split("\n").sort(), [
    `mig;main_a ${1 + 3 * 300 + 1 + 2 + 3 * 200}`,
    "mig;main_a;f 501",
  ]);
}

interface LatencyDoc {
  offCpuRecorded: boolean;
  functions: { name: string; calls: number; total: number; onCpu: number; offCpu: number }[];
  slowest: { name: string; duration: number; start: number; offCpu: number; tid: number; stack: string[] }[];
}

/**
 * Off-CPU time in `ptkit perf`'s latencies: a thread switched out of CPU 0 inside a
 * call and switched in on CPU 1, where the call returns, spent the time between the
 * two switches off the CPU (times in TSC ticks at 1 ns each).
 */
test("a call switched out on one CPU and returning on another: its off-CPU time is the time between", (t) => {
  const { dir, analysis, sink, cpu0, cpu1, at } = twoCpus(t, { latency: "l.json", timeline: "t.json" });
  // Thread 10 on CPU 0 from TSC 110 calls 0x2000 there.
  at(cpu0, 10, 110);
  sink.insn(cpu0, insn(0x1000, FlowClass.Call, 5));
  for (let i = 0; i < 40; i++) sink.insn(cpu0, insn(0x2000));
  // Switched out of CPU 0 at 150; switched in on CPU 1 at 200, where the call returns at 250.
  at(cpu0, 30, 150);
  at(cpu1, 10, 200);
  for (let i = 0; i < 7; i++) sink.insn(cpu1, insn(0x2001));
  cpu1.tscLo = 250;
  sink.insn(cpu1, insn(0x2002, FlowClass.Return));
  sink.insn(cpu1, insn(0x1005));
  cpu0.tscLo = 300;
  sink.insn(cpu0, insn(0x5000));
  const { error } = analysis.finish();
  assert.equal(error, undefined);
  const doc = JSON.parse(readFileSync(join(dir, "l.json"), "utf8")) as LatencyDoc;
  assert.equal(doc.offCpuRecorded, true);
  // The call's slice in the timeline: from just after the call at TSC 110 (time 0: the
  // first TSC) to where the return is placed (times between TSC updates are
  // interpolated by instruction count, and extrapolated past the last one).
  const timeline = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as { traceEvents: object[] };
  const slice = timelineFrames(timeline.traceEvents).find((x) => x.name === "0x2000")!;
  assert.ok(slice.startNs < 40, `${slice.startNs}`);
  const duration = slice.stopNs - slice.startNs;
  assert.ok(duration > 100, `${duration}`);
  // Out from the switch at 150 to the one at 200.
  const f = doc.functions.find((x) => x.name === "0x2000")!;
  assert.deepEqual([f.calls, f.total, f.offCpu, f.onCpu], [1, duration, 50, duration - 50]);
  const slow = doc.slowest[0]!;
  assert.deepEqual(
    [slow.name, slow.duration, slow.start, slow.offCpu, slow.tid, slow.stack],
    ["0x2000", duration, slice.startNs, 50, 10, ["0x1000", "0x2000"]],
  );
});

/**
 * A CPU's trace with a gap: the thread runs on CPU 0, then on CPU 1, then on CPU 0
 * again much later. CPU 0's second stretch starts with a PSB+ whose TSC is far past
 * its last MTC: its CYC packets keep the calibration made before the gap (the same
 * code at the same cycles an instruction), where libipt's calibrator would measure
 * the first MTC after the gap against the last one before it, whose 8-bit CTC wrapped
 * many times in between (TimeConfig.mtcGapRestart).
 */
test("end to end: a CPU's second stretch of trace is timed as its first", (t) => {
  const { dir, offset } = migProgram(t);
  const resume = [
    ...TAKE_UP["PSB+ without TIP.PGE"]!,
    execInsn(BASE + 0x10n, 1, "return"),
    execInsn(BASE + 0xan, 2),
    execInsn(BASE + 0xcn, 2, "cond-branch"),
  ];
  const first = [JSON.stringify({ k: "cpl", cpl: 3 }), execInsn(BASE, 5), ...turns(300), ...LEAVE_IN_F];
  const second = [...resume, ...turns(300), ...LEAVE_IN_F];
  const third = [...resume, ...turns(300), JSON.stringify({ k: "end", ip: hex(BASE + 0xen) })];
  const moved = TRACE_TSC + 0x10000000n;
  const back = TRACE_TSC + 0x30000123n;
  const cpu0 = userTrace(first, TRACE_TSC);
  const file = new PtFile()
    .comm(100, "mig", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, offset, "/bin/mig", TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(cpu0, 0)
    .trace(userTrace(second, moved), 1)
    .trace(userTrace(third, back), 0, undefined, cpu0.length);
  file.records.push(
    switchCpuWide(true, 100, 0, moved - 0x200000n, 0),
    switchCpuWide(false, 100, 0, moved - 0x100000n, 1),
    switchCpuWide(true, 100, 0, back - 0x200000n, 1),
    switchCpuWide(false, 100, 0, back - 0x100000n, 0),
  );
  writeFileSync(join(dir, "perf.data"), fileMode(file.built()));
  const io = captureIo(dir);
  const code = runPerf(["--elf", "mig", "--timeline", "t.json", "-q", "perf.data"], io, "/x");
  assert.equal(code, 0, io.err.join(""));
  const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as { traceEvents: object[] };
  // When the calls of f begin: three stretches, each from its first call to its last.
  const starts = timelineFrames(doc.traceEvents)
    .filter((f) => f.name === "f")
    .map((f) => f.startNs)
    .sort((a, b) => a - b);
  assert.equal(starts.length, 3 * 300 + 2);
  const spans: number[] = [];
  let from = starts[0]!;
  for (let i = 1; i <= starts.length; i++) {
    if (i < starts.length && starts[i]! - starts[i - 1]! < 1e6) continue;
    spans.push(starts[i - 1]! - from);
    from = starts[i] ?? 0;
  }
  assert.equal(spans.length, 3, `${spans}`);
  // Each stretch runs 300 turns of the loop at 3 cycles an instruction.
  for (const span of spans) assert.ok(span > spans[0]! * 0.8 && span < spans[0]! * 1.25, `${spans}`);
});

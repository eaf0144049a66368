/**
 * `ptkit perf`'s fast path for the call-stack outputs (and coverage with them) (session/perf-graph.ts, the timed
 * walk of analysis/coverage-decode.ts): its outputs are byte for byte the general
 * decode's (forced by PerfInternals.generalDecode), with time from TSC, MTC and CYC,
 * on the HASE captures and on synthetic files with thread switches, two processes
 * and kernel code (and `--quiet` alone, errors only, the same); where it hands over, the decode starts again and the outputs are
 * still the general decode's. And it is taken on a typical file. Where code is missing
 * it goes on as perf's decoder does (a missing library, a missing kernel, addresses in
 * no file, the quipper capture), to the same outputs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { FastCoverage } from "../../src/analysis/index.js";
import { runPerf } from "../../src/cli/perf/perf.js";
import { tryParseElf } from "../../src/image/index.js";
import { decodePacket, Packet, PacketType } from "../../src/packet/index.js";
import type { WalkThreads } from "../../src/session/io.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, switchCpuWide, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo, pipeWriters } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import {
  CODE_CALLS,
  CODE_LOOP,
  CODE_SWITCH,
  callTurns,
  insn,
  kernelVisit,
  loopTurns,
  SWITCH_KERNEL,
  switchTo,
  traceOf,
} from "./pt-file.js";
import { loggedWalks } from "./walk-threads.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-fast-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Outputs named by the analysis options of `args`. */
const OUTPUT_OPTIONS = new Set([
  "--timeline",
  "--folded",
  "--perfetto",
  "--latency",
  "--coverage",
  "--edges",
]);

interface Run {
  code: number;
  out: string;
  err: string;
  files: Map<string, Buffer>;
  fast: FastCoverage | undefined;
}

function run(args: string[], general: boolean, walkThreads?: WalkThreads): Run {
  const io = captureIo(dir);
  let fast: FastCoverage | undefined;
  const code = runPerf(args, io, EMPTY_HOME, {
    generalDecode: general,
    onFastPath: (r) => (fast = r),
    walkThreads,
  });
  const files = new Map<string, Buffer>();
  args.forEach((a, i) => {
    if (OUTPUT_OPTIONS.has(a)) files.set(a, readFileSync(join(dir, args[i + 1]!)));
  });
  return { code, out: io.out.join(""), err: io.err.join(""), files, fast };
}

/**
 * Run `args` both ways: the same exit code, output and files; the fast path's outcome.
 * Where the fast path would feed the analysis outputs alone (--quiet), a third way
 * too: each stream walked as a thread of the parallel walk does, its log replayed
 * (PerfInternals.walkThreads; see walk-threads.ts), to the same outputs and outcome.
 */
function same(args: string[]): FastCoverage | undefined {
  const general = run(args, true);
  assert.equal(general.fast, undefined);
  const fast = run(args, false);
  const ways = [fast];
  const walks = args.includes("-q") && general.files.size > 0 ? loggedWalks(args, dir) : undefined;
  if (walks !== undefined) {
    const replayed = run(args, false, walks);
    ways.push(replayed);
    // Replayed where not fed by graph node (coverage), and then to the same outcome.
    const byNode = args.some((a) => a === "--coverage" || a === "--edges");
    if (!byNode && fast.fast?.status === 0) {
      assert.ok(walks.started > 0, "the walk was not replayed");
      assert.equal(replayed.fast?.status, 0, replayed.fast?.reason);
      assert.equal(replayed.fast?.insns, fast.fast.insns);
    }
  }
  for (const way of ways) {
    assert.equal(way.code, general.code, way.err);
    assert.equal(way.err, general.err);
    assert.equal(way.out, general.out);
    for (const [option, bytes] of general.files) {
      assert.ok(bytes.length > 0, option);
      assert.ok(bytes.equals(way.files.get(option)!), `${option} differs`);
    }
  }
  return fast.fast;
}

/** perf script's fields of a branch line that name the thread, the CPU and where the branch is, but not the time. */
const THREAD_FIELDS = "comm,pid,tid,cpu,ip,sym,symoff,dso,addr,flags";

const HASE = "real/hase";
const CAPTURES = ["2018-05/control_flow-20180515T180451", "2018-05/loopy-20180514T145114"];

describe("ptkit perf's fast path on the HASE captures", { skip: skipUnlessCorpus(HASE, "2018-05") }, () => {
  for (const capture of CAPTURES) {
    test(`${capture}: timeline, Perfetto and folded stacks as the general decode's, by the fast path`, () => {
      const data = corpusPath(HASE, capture, "perf.data.1")!;
      const symfs = corpusPath(HASE, capture, "binaries")!;
      const base = ["--symfs", symfs, "-q"];
      const r = same([
        ...base,
        ...["--timeline", "t.json", "--perfetto", "t.pftrace", "--folded", "f.txt", "--latency", "l.txt"],
        data,
      ]);
      // A typical file: the fast path decodes it all (else it would rot unnoticed).
      assert.equal(r?.status, 0, r?.reason);
      assert.ok(r!.insns > 0);
      const byTime = same([...base, "--folded", "ft.txt", "--folded-weight", "time", data]);
      assert.equal(byTime?.status, 0, byTime?.reason);
      const coverage = same([...base, "--coverage", "c.json", "--edges", "e.txt", data]);
      assert.equal(coverage?.status, 0, coverage?.reason);
      for (const calls of [["--calls"], ["--calls", "--sym"], ["--branches"], ["-q"]]) {
        const c = same(["--symfs", symfs, ...calls, data]);
        assert.equal(c?.status, 0, c?.reason);
      }
      // perf script's branch lines without time: the same fast path, the lines of
      // ptkit's own --calls/--branches, and those of perf script's timed decode
      // with the time column taken out.
      // With the thread and the symbols and files too (they need no time either).
      const named = same(["--symfs", symfs, "--itrace=cr", "-F", THREAD_FIELDS, data]);
      assert.equal(named?.status, 0, named?.reason);
      for (const [own, itrace, fields] of [
        ["--calls", "--itrace=cr", "ip,addr,flags"],
        ["--branches", "--itrace=be", "flags,ip,addr"],
      ] as const) {
        const script = ["--symfs", symfs, itrace, "-F", fields, data];
        const c = same(script);
        assert.equal(c?.status, 0, c?.reason);
        const lines = run(script, false).out;
        assert.ok(lines.length > 0);
        if (fields === "ip,addr,flags") assert.equal(lines, run(["--symfs", symfs, own, data], false).out);
        const timed = run(["--symfs", symfs, itrace, "-F", `time,${fields}`, data], false);
        assert.equal(timed.fast, undefined, "a timed line took the fast path");
        assert.equal(timed.out.replace(/^ *\d+\.\d+: /gm, ""), lines);
      }
    });
  }
});

const QUIPPER = ["real", "quipper-perf-data", "perf.data.intel_pt-4.14"] as const;

describe("ptkit perf's fast path on the quipper capture (the kernel traced, nothing it ran at hand)", {
  skip: skipUnlessCorpus(...QUIPPER),
}, () => {
  test("the walk goes on where code is missing as the general decode does: the entry trampoline's errors each time, PIPs taken in passing, interrupts taken up at their FUPs", () => {
    const data = corpusPath(...QUIPPER)!;
    // (No binary there: the capture's are all missing, the host's never read.)
    const base = ["--symfs", join(dir, "nothing")];
    const r = same([...base, "-q", "--timeline", "q.json", data]);
    // The trampoline (in no kernel mmap) errs each time: the walk prints those errors.
    assert.ok(r !== undefined && r.errors > 10, String(r?.errors));
    // (Near the end of the trace a transaction's FUP, after a MODE.TSX outside PSB+, is
    // the general decode's.)
    assert.ok(r.status === 0 || r.offset > 100000, `${r.offset}: ${r.reason}`);
    for (const shown of [["--calls"], ["--branches"], ["-q"]]) assert.ok(same([...base, ...shown, data]));
  });
});

const BASE_A = 0x400000n;
const BASE_B = 0x500000n;
const BASE_C = 0x600000n;

/** An ELF of `code` at `base` named `name`; returns the file offset of the code (the mmap's pgoff). */
function program(name: string, base: bigint, code: Uint8Array, symbol: string): bigint {
  const bytes = elfWithSymbols(base, code, [{ name: symbol, value: base, size: code.length }]);
  writeFileSync(join(dir, name), bytes);
  const elf = tryParseElf(bytes);
  assert.ok(!(elf instanceof Error));
  return BigInt(elf.loads[0]!.offset);
}

/** `trace` with `extra` after every packet `after` says (a TNT's PAD, a FUP's CYC outside PSB+). */
function insertAfter(
  trace: Uint8Array,
  after: (type: number, inPsb: boolean) => boolean,
  extra: number[],
): Uint8Array {
  const out: number[] = [];
  const pkt = new Packet();
  let inPsb = false;
  for (let pos = 0; pos < trace.length; ) {
    const size = decodePacket(trace, pos, trace.length, pkt, 0, 0);
    if (size <= 0) {
      out.push(...trace.subarray(pos));
      break;
    }
    out.push(...trace.subarray(pos, pos + size));
    if (pkt.type === PacketType.Psb) inPsb = true;
    else if (pkt.type === PacketType.PsbEnd) inPsb = false;
    if (after(pkt.type, inPsb)) out.push(...extra);
    pos += size;
  }
  return Uint8Array.from(out);
}

/** The packets of `type` in `trace` in PSB+ and outside it (an OVF ends PSB+ as PSBEND does). */
function packetsOf(trace: Uint8Array, type: number): { inPsb: number; outside: number } {
  const pkt = new Packet();
  let psb = false;
  let inPsb = 0;
  let outside = 0;
  for (let pos = 0, size = 0; pos < trace.length; pos += size) {
    size = decodePacket(trace, pos, trace.length, pkt, 0, 0);
    if (size <= 0) break;
    if (pkt.type === type) {
      if (psb) inPsb++;
      else outside++;
    }
    if (pkt.type === PacketType.Psb) psb = true;
    else if (pkt.type === PacketType.PsbEnd || pkt.type === PacketType.Ovf) psb = false;
  }
  return { inPsb, outside };
}

/** A run in user mode from `base` (a first instruction of 5 bytes), then `turns`, to `end`. */
function userRun(base: bigint, turns: readonly string[], end: bigint): string[] {
  return [
    JSON.stringify({ k: "cpl", cpl: 3 }),
    insn(base, 5),
    ...turns,
    JSON.stringify({ k: "end", ip: `0x${end.toString(16)}` }),
  ];
}

/**
 * `NAME.data`: process 100 running /bin/a (at BASE_A from `pgoff`) and the kernel (its
 * map at SWITCH_KERNEL), traced by `trace`; switch records say who runs (not CR3).
 */
function kernelAndA(name: string, pgoff: bigint, trace: Uint8Array): string {
  const f = new PtFile()
    .kernelMmap("[kernel.kallsyms]_text", SWITCH_KERNEL, 0x1000000n, SWITCH_KERNEL)
    .comm(100, "proc-a", TRACE_TSC - 100n, 0)
    .mmap2(100, BASE_A, 0x1000n, pgoff, "/bin/a", TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(trace);
  f.records.push(switchCpuWide(false, 100, 0, TRACE_TSC - 5n, 0));
  const data = `${name}.data`;
  writeFileSync(join(dir, data), fileMode(f.built()));
  return data;
}

/** A file of process `pid` (`comm`) running `path` mapped at `base` from `pgoff`, traced by `trace` from the start. */
function oneProcess(pid: number, comm: string, base: bigint, pgoff: bigint, path: string, trace: Uint8Array) {
  return new PtFile()
    .comm(pid, comm, TRACE_TSC - 100n, 0)
    .mmap2(pid, base, 0x1000n, pgoff, path, TRACE_TSC - 50n)
    .itraceStart(pid, pid, TRACE_TSC - 10n)
    .trace(trace);
}

describe("ptkit perf's fast path on synthetic files", () => {
  const pgoffA = program("a", BASE_A, CODE_CALLS, "main_a");
  const pgoffB = program("b", BASE_B, CODE_LOOP, "loop_b");
  program("vmlinux", SWITCH_KERNEL, CODE_SWITCH, "switch_mm");
  const args = ["--elf", "a", "--elf", "b", "--vmlinux", "vmlinux", "-q"];
  const outputs = ["--timeline", "t.json", "--folded", "f.txt", "--perfetto", "p.pftrace"];
  /**
   * `data` with `own` (the binaries), every way the walk feeds: the analysis outputs,
   * folded stacks by time and coverage, --calls, --branches and --quiet alone; each
   * the general decode's, all walked to the end.
   */
  const walkedEveryWay = (own: string[], data: string) => {
    const r = same([...own, "-q", ...outputs, "--latency", "l.txt", data]);
    assert.equal(r?.status, 0, `${data}: ${r?.reason} at ${r?.offset}`);
    const byTime = ["--folded", "ft.txt", "--folded-weight", "time", "--coverage", "c.json"];
    assert.equal(same([...own, "-q", ...byTime, data])?.status, 0, data);
    for (const shown of [["--calls"], ["--branches"], ["-q"]])
      assert.equal(same([...own, ...shown, data])?.status, 0, `${data}: ${shown}`);
  };

  test("two processes of one program switching on one CPU, timed by TSC, MTC and CYC", () => {
    const exec = userRun(BASE_A, callTurns(BASE_A, 3000), BASE_A + 5n);
    const f = new PtFile()
      .comm(100, "proc-a", TRACE_TSC - 100n, 0)
      .comm(101, "proc-a2", TRACE_TSC - 95n, 0)
      .mmap2(100, BASE_A, 0x1000n, pgoffA, "/bin/a", TRACE_TSC - 50n)
      .mmap2(101, BASE_A, 0x1000n, pgoffA, "/bin/a", TRACE_TSC - 45n)
      .itraceStart(100, 100, TRACE_TSC - 10n)
      .trace(traceOf(exec));
    // Process 100 leaves the CPU to process 101 (the same program) and comes back, mid-trace.
    for (const [t, out, pid, other] of [
      [0x1000n, true, 100, 101],
      [0x1100n, false, 101, 100],
      [0x3000n, true, 101, 100],
      [0x3100n, false, 100, 101],
    ] as const)
      f.records.push(switchCpuWide(out, pid, other, TRACE_TSC + t, 0));
    writeFileSync(join(dir, "threads.data"), fileMode(f.built()));
    const r = same([...args, ...outputs, "threads.data"]);
    // --calls keeps no time: the switches apply at the events' times only (here both at one PSB+).
    assert.ok(same([...args.filter((a) => a !== "-q"), "--calls", "threads.data"]) !== undefined);
    // 101's image is another: the walk goes on in its graph.
    assert.equal(r?.status, 0, r?.reason);
    // --quiet alone (nothing to print): the fast path decodes it all.
    assert.equal(same([...args, "threads.data"])?.status, 0);
    assert.match(readFileSync(join(dir, "t.json"), "utf8"), /"pid":101/);
  });

  test("threads of one process switching on one CPU, timed by TSC, MTC and CYC", () => {
    const exec = userRun(BASE_A, callTurns(BASE_A, 3000), BASE_A + 5n);
    const f = oneProcess(100, "proc-a", BASE_A, pgoffA, "/bin/a", traceOf(exec));
    // Thread 100 leaves the CPU to thread 101 of its process and comes back, twice.
    for (const [t, out, tid, otherTid] of [
      [0x1000n, true, 100, 101],
      [0x1100n, false, 101, 100],
      [0x3000n, true, 101, 100],
      [0x3100n, false, 100, 101],
      [0x5000n, true, 100, 101],
      [0x5100n, false, 101, 100],
    ] as const)
      f.records.push(switchCpuWide(out, 100, 100, TRACE_TSC + t, 0, { tid, otherTid }));
    writeFileSync(join(dir, "threads1.data"), fileMode(f.built()));
    const r = same([...args, ...outputs, "threads1.data"]);
    assert.equal(r?.status, 0, r?.reason);
    const timeline = readFileSync(join(dir, "t.json"), "utf8");
    assert.match(timeline, /"tid":101/);
    assert.equal(same([...args.filter((a) => a !== "-q"), "--calls", "threads1.data"])?.status, 0);
    assert.equal(same([...args.filter((a) => a !== "-q"), "--branches", "threads1.data"])?.status, 0);
    const script = [...args.filter((a) => a !== "-q"), "--itrace=be", "-F", "ip,addr,flags", "threads1.data"];
    assert.equal(same(script)?.status, 0);
    // Lines that name the thread and where in the process's files it runs, without time.
    const named = [...args.filter((a) => a !== "-q"), "--itrace=b", "-F", THREAD_FIELDS, "threads1.data"];
    assert.equal(same(named)?.status, 0);
    assert.match(run(named, false).out, /^ +[^ ]+ +100\/101 /m);
  });

  test("CPUs taking turns (two and three): processes running at the same times and moving between the CPUs, in the general decode's order", () => {
    for (const cpus of [2, 3]) {
      // Each CPU's stream runs a process from the same time on (events at equal times:
      // the first stream goes first), then each process moves on to the next CPU.
      const f = new PtFile();
      for (let cpu = 0; cpu < cpus; cpu++) {
        const pid = 100 + cpu;
        f.comm(pid, `proc-${pid}`, TRACE_TSC - 100n, cpu)
          .mmap2(pid, BASE_A, 0x1000n, pgoffA, "/bin/a", TRACE_TSC - 50n)
          .itraceStart(pid, pid, TRACE_TSC - 10n, cpu);
      }
      const later = TRACE_TSC + 0x100000n;
      const part = (turns: number, tsc: bigint) =>
        traceOf(userRun(BASE_A, callTurns(BASE_A, turns), BASE_A + 5n), {}, tsc);
      for (let cpu = 0; cpu < cpus; cpu++) {
        const first = part(1500 - 300 * cpu, TRACE_TSC);
        // The second parts start at the same time on the first two CPUs.
        const second = part(700 + 200 * cpu, later + BigInt(cpu >> 1) * 0x40n);
        f.trace(first, cpu).trace(second, cpu, second.length, first.length);
        f.records.push(
          switchCpuWide(true, 100 + cpu, 0, TRACE_TSC + 0x80000n, cpu),
          switchCpuWide(false, 100 + ((cpu + cpus - 1) % cpus), 0, TRACE_TSC + 0xc0000n, cpu),
        );
      }
      const data = `cpus${cpus}.data`;
      writeFileSync(join(dir, data), fileMode(f.built()));
      const r = same([...args, ...outputs, data]);
      assert.equal(r?.status, 0, r?.reason);
      const timeline = readFileSync(join(dir, "t.json"), "utf8");
      for (let cpu = 0; cpu < cpus; cpu++) assert.match(timeline, new RegExp(`"pid":${100 + cpu}`));
      // With coverage and latencies too; --quiet alone; the call and branch lines.
      assert.equal(same([...args, "--edges", "e.txt", "--latency", "l.txt", data])?.status, 0);
      assert.equal(same([...args, data])?.status, 0);
      for (const lines of [
        ["--calls"],
        ["--branches"],
        ["--itrace=cr", "-F", "ip,addr,flags"],
        ["--itrace=b", "-F", THREAD_FIELDS],
      ])
        assert.equal(same([...args.filter((a) => a !== "-q"), ...lines, data])?.status, 0, lines.join(" "));
    }
  });

  test("--tid and --time-range: the fast path feeds and lists what the general decode shows, and counts it", () => {
    // The files of the tests above: threads 100 and 101 taking turns on one CPU, and
    // processes moving between two and three CPUs.
    const tsc = (t: bigint) => `${TRACE_TSC + t}`;
    const cuts: [string, string[]][] = [
      ["threads1.data", ["--tid", "101"]],
      ["threads1.data", ["--tid", "100"]],
      // From within thread 100's first run to within its second, across both switches.
      ["threads1.data", ["--time-range", `${tsc(0x800n)},${tsc(0x3080n)}`]],
      ["threads1.data", ["--time-range", `,${tsc(0x2000n)}`]],
      ["threads1.data", ["--time-range", `${tsc(0x3050n)},`]],
      ["threads1.data", ["--tid", "101", "--time-range", `${tsc(0x2000n)},`]],
      ["cpus2.data", ["--tid", "101"]],
      ["cpus3.data", ["--time-range", `${tsc(0x60000n)},${tsc(0x100020n)}`]],
      ["cpus3.data", ["--tid", "102", "--time-range", `${tsc(0x90000n)},`]],
    ];
    const all = ["--latency", "l.txt", "--edges", "e.txt"];
    for (const [data, cut] of cuts) {
      const what = `${data} ${cut.join(" ")}`;
      const r = same([...args, ...outputs, ...all, ...cut, data]);
      assert.equal(r?.status, 0, `${what}: ${r?.reason}`);
      // The branch lines and --quiet alone; perf script's lines go the general way (cut
      // by the times perf gives them, which the walk does not keep).
      const listed = args.filter((a) => a !== "-q");
      for (const lines of [["--calls"], ["--branches"]]) {
        const l = same([...listed, ...lines, ...cut, data]);
        assert.equal(l?.status, 0, `${what} ${lines.join(" ")}: ${l?.reason}`);
      }
      assert.equal(same([...listed, "--itrace=be", "-F", "ip,addr,flags", ...cut, data]), undefined);
      assert.equal(same([...args, ...cut, data])?.status, 0, `${what} -q`);
      if (cut[0] === "--tid") {
        // The frames (begin events) are the thread's alone.
        const events: { ph: string; tid: number }[] = JSON.parse(
          readFileSync(join(dir, "t.json"), "utf8"),
        ).traceEvents;
        const tids = new Set(events.filter((e) => e.ph === "B").map((e) => e.tid));
        assert.deepEqual([...tids], [Number(cut[1])], what);
      }
      // Part of the instructions, counted as the general decode counts them (same() compares the summary).
      const summary = run([...args, ...outputs, ...cut, data], false).out;
      const whole = run([...args, ...outputs, data], false).out;
      const insns = (text: string) => Number(/: (\d+) instructions/.exec(text)?.[1]);
      assert.ok(insns(summary) > 0 && insns(summary) < insns(whole), `${what}: ${summary} of ${whole}`);
    }
  });

  test("outputs into files that keep what was written (pipes): the general decode, which writes them once", () => {
    const io = captureIo(dir);
    const files = pipeWriters(io);
    let fast: FastCoverage | undefined;
    const code = runPerf([...args, "--timeline", "pipe.json", "threads1.data"], io, EMPTY_HOME, {
      onFastPath: (r) => (fast = r),
    });
    assert.equal(code, 0, io.err.join(""));
    assert.equal(fast, undefined, "the fast path ran into a file it could not start again");
    run([...args, "--timeline", "t.json", "threads1.data"], true);
    assert.equal(files.get("pipe.json"), readFileSync(join(dir, "t.json"), "utf8"));
  });

  test("a corrupt trace: the general decode's outputs and errors (the fast path hands over)", () => {
    const exec = userRun(BASE_A, callTurns(BASE_A, 3000), BASE_A + 5n);
    const trace = traceOf(exec);
    // Bytes no packet starts with, mid-trace: a decode error, and on from the next PSB.
    trace.fill(0xd9, trace.length >> 1, (trace.length >> 1) + 8);
    const f = oneProcess(100, "proc-a", BASE_A, pgoffA, "/bin/a", trace);
    writeFileSync(join(dir, "corrupt.data"), fileMode(f.built()));
    const r = same([...args, ...outputs, "corrupt.data"]);
    assert.equal(r?.status, -1);
    assert.match(run([...args, ...outputs, "corrupt.data"], true).out, /^\[[0-9a-f]+: /m);
    for (const lines of [["--calls"], ["--branches"], ["--itrace=cr", "-F", "ip,addr,flags"]])
      assert.equal(same([...args.filter((a) => a !== "-q"), ...lines, "corrupt.data"])?.status, -1);
    // perf script's error lines (with their time) from the decode after the handover.
    const script = [...args.filter((a) => a !== "-q"), "--itrace=be", "-F", "ip,addr,flags", "corrupt.data"];
    assert.equal(same(script)?.status, -1);
    assert.match(run(script, false).out, /instruction trace error .* time \d+\.\d+ /);
    // --quiet alone: the fast path hands over and the general decode prints the error.
    const quiet = run([...args, "corrupt.data"], false);
    assert.equal(quiet.fast?.status, -1);
    assert.match(quiet.out, /^\[[0-9a-f]+: /m);
    assert.equal(same([...args, "corrupt.data"])?.status, -1);
  });

  test("calls, returns and runs of jumps: --calls leaves out nodes that end in a jump after one, to the general decode's lines", () => {
    // l: call f; jmp a; a: jmp b; b: dec ecx; jnz l; hlt; f: ret (at BASE_C + 0x20).
    const code = new Uint8Array(0x21);
    code.set([0xb9, 0, 0, 1, 0, 0xe8, 0x16, 0, 0, 0, 0xeb, 0, 0xeb, 0, 0xff, 0xc9, 0x75, 0xf3, 0xf4]);
    code[0x20] = 0xc3;
    const pgoffC = program("c", BASE_C, code, "main_c");
    const turn = [
      insn(BASE_C + 5n, 5, "call"),
      insn(BASE_C + 0x20n, 1, "return"),
      insn(BASE_C + 0xan, 2, "jump"),
      insn(BASE_C + 0xcn, 2, "jump"),
      insn(BASE_C + 0xen, 2),
      insn(BASE_C + 0x10n, 2, "cond-branch"),
    ];
    const exec = userRun(BASE_C, Array.from({ length: 2000 }, () => turn).flat(), BASE_C + 0x12n);
    const f = oneProcess(300, "proc-c", BASE_C, pgoffC, "/bin/c", traceOf(exec));
    // (A switch record: who runs is known without following CR3, which the fast path leaves to the general decode.)
    f.records.push(switchCpuWide(false, 300, 0, TRACE_TSC - 5n, 0));
    writeFileSync(join(dir, "jumps.data"), fileMode(f.built()));
    const own = ["--elf", "c"];
    for (const lines of [["--calls"], ["--branches"], ["--itrace=cr", "-F", "ip,addr,flags"]]) {
      const r = same([...own, ...lines, "jumps.data"]);
      assert.equal(r?.status, 0, r?.reason);
    }
    const calls = run([...own, "--calls", "jumps.data"], false).out.split("\n");
    // Each turn's call and return, to where they go (after two jumps and a jnz the walk held back).
    assert.equal(calls.filter((l) => / {10}600005 => {11}600020$/.test(l)).length, 2000);
    assert.equal(calls.filter((l) => / {10}600020 => {11}60000a$/.test(l)).length, 2000);
    assert.match(calls.at(-2)!, /^ {2}tr end {2}async {10,}600012 => {16}0$/);
  });

  test("two processes and the kernel on one CPU: the general decode's outputs (the fast path hands over)", () => {
    const exec = [
      JSON.stringify({ k: "cpl", cpl: 3 }),
      JSON.stringify({ k: "cr3", cr3: "0xa000" }),
      insn(BASE_A, 5),
      ...callTurns(BASE_A, 2000),
      ...switchTo(BASE_A + 5n, "0xb000"),
      ...loopTurns(BASE_B, 3000),
      ...switchTo(BASE_B, "0xa000"),
      ...callTurns(BASE_A, 1000),
      JSON.stringify({ k: "end", ip: `0x${(BASE_A + 5n).toString(16)}` }),
    ];
    const f = new PtFile()
      .comm(100, "proc-a", TRACE_TSC - 100n, 0)
      .comm(200, "proc-b", TRACE_TSC - 90n, 0)
      .mmap2(100, BASE_A, 0x1000n, pgoffA, "/bin/a", TRACE_TSC - 50n)
      .mmap2(200, BASE_B, 0x1000n, pgoffB, "/bin/b", TRACE_TSC - 40n)
      .itraceStart(100, 100, TRACE_TSC - 10n)
      .trace(traceOf(exec));
    writeFileSync(join(dir, "two.data"), fileMode(f.built()));
    const r = same([...args, ...outputs, "two.data"]);
    // The MOV CR3s' PIPs: who runs follows CR3, which the general decode does.
    assert.equal(r?.status, -1);
    // --calls: the lines printed before the handover are not printed twice.
    const calls = run([...args.filter((a) => a !== "-q"), "--calls", "two.data"], false);
    assert.ok(calls.fast !== undefined && calls.fast.status === -1 && calls.fast.offset > 0);
    assert.match(calls.out, /^ {2}call /m);
    assert.equal(same([...args.filter((a) => a !== "-q"), "--calls", "two.data"])?.status, -1);
    assert.equal(same([...args.filter((a) => a !== "-q"), "--branches", "two.data"])?.status, -1);
    assert.equal(same([...args, "two.data"])?.status, -1);
  });

  test("overflows (OVF after PSB+ and cutting it short; CYC or MTC, RET compression or not, user only): the walk goes on through them, to the general decode's outputs", () => {
    // The program's calls, and now and then an interrupt into a kernel loop; the trace
    // unit's internal buffer too small for the packets at times (PSB+ above all).
    const KERNEL_LOOP = Uint8Array.from([0xff, 0xc8, 0x75, 0xfc, 0x48, 0xcf]); // dec eax; jnz; iretq
    program("vmlinux-loop", SWITCH_KERNEL, KERNEL_LOOP, "irq_loop");
    const turns: string[] = [];
    for (let i = 0; i < 4000; i++) {
      const [call, ret, dec, jnz] = callTurns(BASE_A, 1);
      turns.push(call!, ret!);
      if (i % 3 === 1) {
        const body: string[] = [];
        for (let j = 0; j < 2 + (i % 5); j++)
          body.push(insn(SWITCH_KERNEL, 2), insn(SWITCH_KERNEL + 2n, 2, "cond-branch"));
        turns.push(...kernelVisit(BASE_A + 0xan, [...body, insn(SWITCH_KERNEL + 4n, 2, "iret")]));
      }
      turns.push(dec!, jnz!);
    }
    const exec = userRun(BASE_A, turns, BASE_A + 5n);
    const own = ["--elf", "a", "--vmlinux", "vmlinux-loop"];
    const seen = { inPsb: 0, outside: 0 };
    for (const [name, extra, bytes] of [
      ["ovf-cyc", {}, 64],
      ["ovf-mtc", { CYCEn: 0 }, 64],
      ["ovf-noretc", { DisRETC: 1 }, 64],
      ["ovf-user", { OS: 0 }, 48],
    ] as const) {
      const trace = traceOf(exec, extra, undefined, { bytes, drainPerCycle: 1 });
      const { inPsb, outside } = packetsOf(trace, PacketType.Ovf);
      assert.ok(inPsb + outside > 0, name);
      seen.inPsb += inPsb;
      seen.outside += outside;
      const data = kernelAndA(name, pgoffA, trace);
      walkedEveryWay(own, data);
      assert.match(readFileSync(join(dir, "t.json"), "utf8"), /"name":"overflow","cat":"gap"/);
      // Without the kernel's code: the walk loses control at each interrupt, and takes
      // up where the interrupt's IRETQ (MODE.Exec, TIP) or an overflow's FUP says.
      if (name === "ovf-user") continue;
      const lost = same(["--elf", "a", "-q", ...outputs, data]);
      assert.equal(lost?.status, 0, `${name} without the kernel: ${lost?.reason} at ${lost?.offset}`);
      for (const shown of [["--calls"], ["--branches"]])
        assert.equal(same(["--elf", "a", ...shown, data])?.status, 0);
    }
    // OVFs in PSB+ (which they end) and outside it.
    assert.ok(seen.inPsb > 0 && seen.outside > 0, `${seen.inPsb} OVFs in PSB+, ${seen.outside} outside`);
  });

  test("MOV CR3 in the kernel, who runs told by switch records: each PIP a paging event after its MOV (CYC or MTC, RET compression or not), to the general decode's outputs", () => {
    // An interrupt into the kernel now and then, which calls a function, runs a while
    // (NOPs), loads CR3, stalls (cycles, no packet), calls another and returns: `call g;
    // nop x30; mov cr3, rax; call f; iretq; f: ret; g: ret`. (The paging event's place
    // shows in the times: one instruction off, the timeline differs.)
    const K = SWITCH_KERNEL;
    const code = [
      0xe8,
      41,
      0,
      0,
      0,
      ...new Array(30).fill(0x90),
      0x0f,
      0x22,
      0xd8,
      0xe8,
      2,
      0,
      0,
      0,
      0x48,
      0xcf,
      0xc3,
      0xc3,
    ];
    program("vmlinux-cr3", K, Uint8Array.from(code), "switch_mm");
    const k = (offset: number) => K + BigInt(offset);
    const turns: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const [call, ret, dec, jnz] = callTurns(BASE_A, 1);
      turns.push(call!, ret!);
      if (i % 4 === 1)
        turns.push(
          ...kernelVisit(BASE_A + 0xan, [
            insn(k(0), 5, "call"),
            insn(k(46), 1, "return"),
            ...Array.from({ length: 30 }, (_, n) => insn(k(5 + n), 1)),
            insn(k(35), 3, "mov-cr3"),
            JSON.stringify({ k: "cr3", cr3: i % 8 === 1 ? "0x1000" : "0x2000" }),
            JSON.stringify({ k: "cycles", n: 3000 }),
            insn(k(38), 5, "call"),
            insn(k(45), 1, "return"),
            insn(k(43), 2, "iret"),
          ]),
        );
      turns.push(dec!, jnz!);
    }
    const own = ["--elf", "a", "--vmlinux", "vmlinux-cr3"];
    const exec = userRun(BASE_A, turns, BASE_A + 5n);
    for (const [name, extra] of [
      ["pip-cyc", {}],
      ["pip-mtc", { CYCEn: 0 }],
      ["pip-noretc", { DisRETC: 1 }],
    ] as const) {
      const trace = traceOf(exec, extra);
      assert.ok(packetsOf(trace, PacketType.Pip).outside > 100, name);
      walkedEveryWay(own, kernelAndA(name, pgoffA, trace));
    }
  });

  test("transactions (MODE.TSX: begin, commit, abort to the fallback; one under way at a PSB): the walk reports them at their FUPs, to the general decode's outputs", () => {
    // `mov ecx, n; l: xbegin fallback; call f; xend; c: dec ecx; jnz l; hlt; f: ret;
    // fallback: jmp c`; every fifth transaction aborts in f.
    const T = 0x700000n;
    const code = [0xb9, 0, 0x10, 0, 0, 0xc7, 0xf8, 14, 0, 0, 0, 0xe8, 8, 0, 0, 0];
    code.push(0x0f, 0x01, 0xd5, 0xff, 0xc9, 0x75, 0xee, 0xf4, 0xc3, 0xeb, 0xf8);
    const pgoff = program("tsx", T, Uint8Array.from(code), "main_tsx");
    const t = (offset: number) => T + BigInt(offset);
    const turns: string[] = [];
    for (let i = 0; i < 3000; i++) {
      turns.push(insn(t(5), 6, "xbegin"), insn(t(11), 5, "call"));
      if (i % 5 === 2) {
        const abort = { k: "tsx-abort", from: `0x${t(24).toString(16)}`, to: `0x${t(25).toString(16)}` };
        turns.push(JSON.stringify(abort), insn(t(25), 2, "jump"));
      } else turns.push(insn(t(24), 1, "return"), insn(t(16), 3, "xend"));
      turns.push(insn(t(19), 2), insn(t(21), 2, "cond-branch"));
    }
    const exec = userRun(T, turns, t(23));
    for (const [name, extra] of [
      ["tsx-cyc", {}],
      ["tsx-mtc", { CYCEn: 0 }],
      ["tsx-noretc", { DisRETC: 1 }],
    ] as const) {
      const trace = traceOf(exec, extra);
      const modes = packetsOf(trace, PacketType.ModeTsx);
      assert.ok(
        modes.outside > 1000 && modes.inPsb > 0,
        `${name}: ${modes.outside} MODE.TSX, ${modes.inPsb} in PSB+`,
      );
      const f = oneProcess(100, "proc-t", T, pgoff, "/bin/tsx", trace);
      f.records.push(switchCpuWide(false, 100, 0, TRACE_TSC - 5n, 0));
      const data = `${name}.data`;
      writeFileSync(join(dir, data), fileMode(f.built()));
      walkedEveryWay(["--elf", "tsx"], data);
      // An abort ends the frames opened in the transaction.
      assert.match(readFileSync(join(dir, "t.json"), "utf8"), /"name":"abort","cat":"frame-end"/);
    }
  });

  test("code that is missing (a library near, one far, the kernel): the walk goes on as perf's resync does, to the general decode's outputs", () => {
    // A program that calls a library nearby (direct) and one far off (indirect), whose
    // binaries are missing, as is the kernel's code (an interrupt now and then, in the
    // program and in the library); now and then the indirect call goes where nothing
    // is mapped (an error each time, printed).
    const GONE = BASE_A + 0x10000n;
    const FAR = 0x7f0000001000n;
    const NOWHERE = 0x7e0000002000n;
    const rel = Number(GONE - (BASE_A + 0xan));
    const code = Uint8Array.from([
      ...[0xb9, 0, 0, 1, 0], // mov ecx, 0x10000
      ...[0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, 0], // call GONE
      ...[0xff, 0xd0], // call rax (FAR)
      ...[0xff, 0xc9], // dec ecx
      ...[0x75, 0xf5], // jnz 5
      0xf4,
      ...new Array(0xf).fill(0xcc),
      0xc3, // 0x20: ret (called back from the far library)
    ]);
    const pgoff = program("calls-gone", BASE_A, code, "main_gone");
    // (The kernel's code, an IRET, is missing.)
    const interrupt = (from: bigint) => kernelVisit(from, [insn(SWITCH_KERNEL, 2, "iret")]);
    // (In turn `callBack` the far library calls back into the program, where `record`
    // happens: a transaction's abort, MODE.TSX outside PSB+, or a frequency change, a CBR
    // outside PSB+, each of which the walk reports.)
    const abort = JSON.stringify({ k: "tsx-abort", from: "0x400020", to: "0x400020" });
    const cbr = JSON.stringify({ k: "cbr", ratio: 30 });
    const turn = (i: number, callBack = -1, record = abort) => [
      insn(BASE_A + 5n, 5, "call"),
      insn(GONE, 2),
      ...(i % 7 === 3 ? interrupt(GONE + 2n) : []),
      insn(GONE + 2n, 2, "cond-branch"),
      insn(GONE + (i % 2 === 0 ? 6n : 4n), 1, "return"),
      // (Its FUP whole after a loss: perf takes up there, and the interrupt's TIP as the call's.)
      ...(i % 5 === 1 ? interrupt(BASE_A + 0xan) : []),
      insn(BASE_A + 0xan, 2, "call-indirect"),
      ...(i % 11 === 5
        ? [insn(NOWHERE, 1, "return")]
        : i === callBack
          ? // A call back into the program (perf takes up there).
            [
              insn(FAR, 2, "cond-branch"),
              insn(FAR + 2n, 2, "call-indirect"),
              record,
              insn(BASE_A + 0x20n, 1, "return"),
              insn(FAR + 4n, 1, "return"),
            ]
          : [insn(FAR, 2), insn(FAR + 2n, 1, "return")]),
      insn(BASE_A + 0xcn, 2),
      insn(BASE_A + 0xen, 2, "cond-branch"),
    ];
    const exec = userRun(BASE_A, Array.from({ length: 6000 }, (_, i) => turn(i)).flat(), BASE_A + 5n);
    const file = (name: string, trace: Uint8Array) => {
      const f = new PtFile()
        .kernelMmap("[kernel.kallsyms]_text", SWITCH_KERNEL, 0x1000000n, SWITCH_KERNEL)
        .comm(100, "gone", TRACE_TSC - 100n, 0)
        .mmap2(100, BASE_A, 0x1000n, pgoff, "/bin/calls-gone", TRACE_TSC - 50n)
        .mmap2(100, GONE, 0x1000n, 0n, "/lib/gone.so", TRACE_TSC - 45n)
        .mmap2(100, FAR - 0x1000n, 0x2000n, 0n, "/lib/far.so", TRACE_TSC - 40n)
        .itraceStart(100, 100, TRACE_TSC - 10n)
        .trace(trace);
      // Switch records: who runs follows them, not CR3 (the kernel's PIPs in PSB+ are status).
      f.records.push(switchCpuWide(false, 100, 0, TRACE_TSC - 5n, 0));
      writeFileSync(join(dir, name), fileMode(f.built()));
    };
    // Without RET compression the returns take TIPs; user space alone, the interrupts
    // are tracing stopped and started again (FUP + TIP.PGD, TIP.PGE).
    file("gone.data", traceOf(exec));
    file("gone-noretc.data", traceOf(exec, { DisRETC: 1 }));
    file("gone-user.data", traceOf(exec, { OS: 0 }));
    // PADs after the TNTs: an error names the offset past them. A CYC between each
    // interrupt's FUP and TIP: perf takes up at the FUP at the FUP's time.
    const tnt = (type: number) => type === PacketType.Tnt8 || type === PacketType.Tnt64;
    file("gone-pads.data", insertAfter(traceOf(exec), tnt, [0]));
    file(
      "gone-cyc.data",
      insertAfter(traceOf(exec), (type, inPsb) => type === PacketType.Fup && !inPsb, [0x0b]),
    );
    const own = ["--elf", "calls-gone"];
    for (const data of [
      "gone.data",
      "gone-noretc.data",
      "gone-user.data",
      "gone-pads.data",
      "gone-cyc.data",
    ]) {
      const r = same([...own, "-q", ...outputs, "--latency", "l.txt", data]);
      assert.equal(r?.status, 0, r?.reason);
      assert.ok(r!.insns > 0);
      for (const shown of [["--calls"], ["--branches"], ["-q"]])
        assert.equal(same([...own, ...shown, data])?.status, 0);
      const calls = run([...own, "--calls", data], false);
      // Taken up after each loss where an address came whole (perf's trace start): the
      // far library's call, the kernel's interrupts; the stops charged to each binary.
      assert.match(calls.out, /^ {2}tr strt +0 => +7f0000001000$/m);
      const user = data === "gone-user.data";
      if (!user) assert.match(calls.out, /^ {2}tr strt +0 => ffffffff81000000$/m);
      for (const gone of [...(user ? [] : ["\\[kernel\\]"]), "/lib/gone\\.so", "/lib/far\\.so"])
        assert.match(calls.err, new RegExp(`no binary for ${gone}.*: \\d+ addresses needed it`));
      // Where nothing is mapped: an error each time, where the general decode prints it.
      assert.match(calls.out, /^\[[0-9a-f]+: no memory mapped at this address at tsc [0-9a-f]+\]$/m);
    }
    // With RET compression the interrupts' FUPs come whole after a loss: perf takes up
    // there, and takes the interrupt's TIP as the indirect call's.
    const calls = run([...own, "--calls", "gone.data"], false).out;
    assert.match(calls, /^ {2}tr strt +0 => +40000a$/m);
    assert.match(calls, /^ {2}call +40000a => ffffffff81000000$/m);
    // Losses, then a transaction's abort in the program's code, where the walk took up
    // at a call back into it: the walk goes on.
    const later = Array.from({ length: 600 }, (_, i) => turn(i, 501)).flat();
    const withAbort = traceOf(userRun(BASE_A, later, BASE_A + 5n), { DisRETC: 1 });
    file("gone-then-abort.data", withAbort);
    for (const shown of [["-q", ...outputs], ["--calls"], ["-q"]])
      assert.equal(same([...own, ...shown, "gone-then-abort.data"])?.status, 0);
    // Then what the walk leaves to the general decode (an EXSTOP after the abort's
    // MODE.TSX): the decode starts again, the stops charged once.
    const exstop = insertAfter(
      withAbort,
      (type, inPsb) => type === PacketType.ModeTsx && !inPsb,
      [0x02, 0x62],
    );
    file("gone-then-exstop.data", exstop);
    const r = same([...own, "-q", ...outputs, "gone-then-exstop.data"]);
    assert.equal(r?.status, -1);
    assert.ok(r!.offset > 2000, String(r!.offset));
    // The errors the walk printed before are not printed twice (nor its lines).
    assert.ok(r!.errors > 0);
    for (const shown of [["--calls"], ["--branches"], ["-q"]])
      assert.equal(same([...own, ...shown, "gone-then-exstop.data"])?.status, -1);
    // A CBR there: an event at its time, the walk goes on.
    const withCbr = Array.from({ length: 600 }, (_, i) => turn(i, 501, cbr)).flat();
    file("gone-cbr.data", traceOf(userRun(BASE_A, withCbr, BASE_A + 5n), { DisRETC: 1 }));
    for (const shown of [["-q", ...outputs], ["--calls"], ["-q"]])
      assert.equal(same([...own, ...shown, "gone-cbr.data"])?.status, 0);
  });
});

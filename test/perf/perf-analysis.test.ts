/**
 * `ptkit perf`'s analysis outputs (--timeline, --folded, --coverage, --afl-map, -q):
 * on the HASE captures the timeline parses, each thread's frames nest, its call
 * frames are perf script's calls and the folded stacks weigh perf script's
 * instructions; on a synthetic file where two processes take turns on one CPU, each
 * thread gets its own track, named by its COMM, with frames named from its binary and
 * the kernel's.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { tryParseElf } from "../../src/image/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import {
  CODE_CALLS,
  CODE_LOOP,
  CODE_SWITCH,
  callTurns,
  insn,
  loopTurns,
  SWITCH_KERNEL,
  switchTo,
  traceOf,
} from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-analysis-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface TraceEvent {
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur: number;
  name: string;
  cat: string;
  args?: { name?: string; end?: string };
}
interface Timeline {
  traceEvents: TraceEvent[];
  otherData: { schema: string; clock: string; nsPerTick: number };
}

function perf(cwd: string, args: string[]): { out: string; err: string; code: number } {
  const io = captureIo(cwd);
  const code = runPerf(args, io, EMPTY_HOME);
  return { out: io.out.join(""), err: io.err.join(""), code };
}

const readTimeline = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Timeline;

/** Sum of the folded stacks' weights. */
function foldedTotal(path: string): number {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

/** Every thread's complete events nest: each lies within the one around it, or after it. */
function assertNested(events: readonly TraceEvent[]): void {
  const byThread = new Map<string, Array<[number, number, string]>>();
  for (const e of timelineFrames(events)) {
    const list = byThread.get(`${e.pid}/${e.tid}`) ?? [];
    list.push([e.startNs, e.stopNs, e.name]);
    byThread.set(`${e.pid}/${e.tid}`, list);
  }
  assert.ok(byThread.size > 0, "no frames");
  for (const [thread, frames] of byThread) {
    frames.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    const open: Array<[number, number, string]> = [];
    for (const f of frames) {
      while (open.length > 0 && open.at(-1)![1] <= f[0] && open.at(-1)![1] !== f[1]) open.pop();
      const around = open.at(-1);
      if (around) assert.ok(f[1] <= around[1], `${thread}: ${f[2]} ${f} overlaps ${around[2]} ${around}`);
      open.push(f);
    }
  }
}

const HASE = "real/hase";
const CAPTURES = [
  ["control_flow-20180515", "2018-05/control_flow-20180515T180451"],
  ["loopy-20180514", "2018-05/loopy-20180514T145114"],
] as const;

describe("ptkit perf analysis outputs on the HASE captures", {
  skip: skipUnlessCorpus(HASE, "2018-05"),
}, () => {
  for (const [ref, run] of CAPTURES) {
    test(`${ref}: timeline and folded stacks match perf script`, () => {
      const reference = (kind: string) =>
        readFileSync(corpusPath(HASE, "reference", `${ref}.perf-script-${kind}.txt`)!, "utf8")
          .split("\n")
          .filter((l) => l.trim() !== "");
      const insns = reference("insn").length;
      // perf script's calls: taken call branches, and calls that ended the trace.
      const calls = reference("branches").filter((l) => /^ {2}(call|tr end {2}call) /.test(l)).length;
      const t = join(dir, `${ref}.json`);
      const f = join(dir, `${ref}.folded`);
      const ft = join(dir, `${ref}.time.folded`);
      const data = corpusPath(HASE, run, "perf.data.1")!;
      const symfs = corpusPath(HASE, run, "binaries")!;
      const r = perf(dir, ["--symfs", symfs, "--timeline", t, "--folded", f, "-q", data]);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.err, "");
      assert.equal(r.out, `wrote ${t}, ${f}: ${insns} instructions, ${calls} calls, 1 thread in 1 process\n`);
      const timeline = readTimeline(t);
      assert.equal(timeline.otherData.schema, "ptkit-timeline");
      // perf's TSC conversion gives real nanoseconds.
      assert.equal(timeline.otherData.clock, "ns");
      assert.ok(timeline.otherData.nsPerTick > 0.1 && timeline.otherData.nsPerTick < 10);
      assertNested(timeline.traceEvents);
      const frames = timelineFrames(timeline.traceEvents);
      assert.equal(frames.filter((e) => e.cat === "call").length, calls);
      // Named from the binary's symbols: no frame is a bare address.
      assert.deepEqual(
        frames.filter((e) => e.name.startsWith("0x")),
        [],
      );
      assert.ok(frames.some((e) => e.name === "_start" && e.cat === "root"));
      const names = timeline.traceEvents.filter((e) => e.ph === "M").map((e) => e.args?.name);
      assert.deepEqual(names, [ref.split("-")[0], ref.split("-")[0]]);
      assert.equal(foldedTotal(f), insns);
      const byTime = perf(dir, ["--symfs", symfs, "--folded", ft, "--folded-weight", "time", "-q", data]);
      assert.equal(byTime.code, 0, byTime.err);
      const span = Math.max(...frames.map((e) => e.ts + e.dur)) - Math.min(...frames.map((e) => e.ts));
      const total = foldedTotal(ft);
      assert.ok(total > 0 && total <= span * 1000 + 1, `${total} ns of ${span} µs`);
    });
  }

  const [, run] = CAPTURES[0];
  const data = () => corpusPath(HASE, run, "perf.data.1")!;
  const symfs = () => corpusPath(HASE, run, "binaries")!;

  test("without -q the printed output is unchanged (text and --jsonl)", () => {
    for (const extra of [[], ["--jsonl"], ["--calls", "--sym"]]) {
      const plain = perf(dir, ["--symfs", symfs(), ...extra, data()]);
      const withTimeline = perf(dir, ["--symfs", symfs(), ...extra, "--timeline", "x.json", data()]);
      assert.equal(withTimeline.code, 0, withTimeline.err);
      assert.equal(withTimeline.out, plain.out);
      assert.ok(readTimeline(join(dir, "x.json")).traceEvents.length > 10);
    }
    // -q alone: errors only, and this capture decodes without any.
    assert.equal(perf(dir, ["--symfs", symfs(), "-q", data()]).out, "");
  });

  test("--coverage and --afl-map", () => {
    const r = perf(dir, ["--symfs", symfs(), "--coverage", "c.json", "--afl-map", "afl.bin", "-q", data()]);
    assert.equal(r.code, 0, r.err);
    const coverage = JSON.parse(readFileSync(join(dir, "c.json"), "utf8")) as { blocks: unknown[] };
    assert.ok(coverage.blocks.length > 10);
    const afl = readFileSync(join(dir, "afl.bin"));
    assert.equal(afl.length, 65536);
    assert.ok(afl.some((b) => b !== 0));
  });

  test("bad analysis options are errors", () => {
    assert.match(perf(dir, ["--timeline", "--folded", "f", data()]).err, /--timeline: missing argument/);
    assert.match(perf(dir, ["--folded-weight", "bytes", "--folded", "f", data()]).err, /want insn or time/);
    assert.match(perf(dir, ["--stack-depth", "0", "--folded", "f", data()]).err, /want a depth/);
    const r = perf(dir, ["--symfs", symfs(), "--timeline", join(dir, "no", "such", "dir.json"), data()]);
    assert.equal(r.code, 1);
    assert.match(r.err, /cannot write/);
  });
});

// Two processes at different addresses take turns on CPU 0 (interrupt, MOV CR3 in the
// kernel, IRET), recorded without switch records: the thread follows the CR3.
const BASE_A = 0x400000n;
const BASE_B = 0x500000n;
const KERNEL = SWITCH_KERNEL;
const codeA = CODE_CALLS;
const codeB = CODE_LOOP;
const codeK = CODE_SWITCH;
const turnA = (n: number) => callTurns(BASE_A, n);
const turnB = (n: number) => loopTurns(BASE_B, n);
const kernel = switchTo;
const CALLS_A = [3000, 2000];
const exec = [
  JSON.stringify({ k: "cpl", cpl: 3 }),
  JSON.stringify({ k: "cr3", cr3: "0xa000" }),
  insn(BASE_A, 5),
  ...turnA(CALLS_A[0]!),
  ...kernel(BASE_A + 5n, "0xb000"),
  ...turnB(20000),
  ...kernel(BASE_B, "0xa000"),
  ...turnA(CALLS_A[1]!),
  ...kernel(BASE_A + 5n, "0xb000"),
  ...turnB(500),
  JSON.stringify({ k: "end", ip: `0x${(BASE_B + 4n).toString(16)}` }),
];

/** An ELF of `code` at `base` with `symbols`; returns the file offset of the code (the mmap's pgoff). */
function writeProgram(
  name: string,
  base: bigint,
  code: Uint8Array,
  symbols: Parameters<typeof elfWithSymbols>[2],
) {
  const bytes = elfWithSymbols(base, code, symbols);
  writeFileSync(join(dir, name), bytes);
  const elf = tryParseElf(bytes);
  assert.ok(!(elf instanceof Error));
  return BigInt(elf.loads[0]!.offset);
}

describe("ptkit perf analysis outputs of two processes on one CPU", () => {
  const pgoffA = writeProgram("a", BASE_A, codeA, [
    { name: "main_a", value: BASE_A, size: 0x10 },
    { name: "f", value: BASE_A + 0x10n, size: 1 },
  ]);
  const pgoffB = writeProgram("b", BASE_B, codeB, [{ name: "loop_b", value: BASE_B, size: 5 }]);
  writeProgram("vmlinux", KERNEL, codeK, [{ name: "switch_mm", value: KERNEL, size: 5 }]);
  const trace = traceOf(exec);
  const file = (name: string, bSeen: bigint) => {
    const f = new PtFile()
      .comm(100, "proc-a", TRACE_TSC - 100n, 1)
      .comm(200, "proc-b", TRACE_TSC - 90n, 1)
      .mmap2(100, BASE_A, 0x1000n, pgoffA, "/bin/a", TRACE_TSC - 50n)
      .itraceStart(100, 100, TRACE_TSC - 10n)
      .mmap2(200, BASE_B, 0x1000n, pgoffB, "/bin/b", bSeen)
      .trace(trace);
    writeFileSync(join(dir, name), fileMode(f.built()));
    return name;
  };
  const args = ["--elf", "a", "--elf", "b", "--vmlinux", "vmlinux"];

  test("a track per thread, named by COMM, frames by each binary's symbols", () => {
    // B is seen running (its MMAP2's sample_id) just after the PIP to its CR3.
    const probe = perf(dir, [...args, "--jsonl", file("probe.data", TRACE_TSC + 0x1000000000n)]);
    const pip = probe.out.split("\n").find((l) => l.includes('"text":"[paging, cr3: 000000000000b000]"'));
    assert.ok(pip, probe.err);
    const data = file("two.data", BigInt((JSON.parse(pip) as { tsc: string }).tsc) + 1n);
    const r = perf(dir, [...args, "--timeline", "two.json", "--folded", "two.folded", "-q", data]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.err, "");
    const printed = perf(dir, [...args, data]).out.split("\n");
    const insns = printed.filter((l) => /^[0-9a-f]{16}$/.test(l)).length;
    // Quiet: the errors (B's code before B is known) and the summary.
    const errors = printed.filter((l) => /^\[[0-9a-f]+: /.test(l));
    assert.ok(errors.length > 0);
    assert.equal(
      r.out,
      `${errors.join("\n")}\nwrote two.json, two.folded: ${insns} instructions, ${CALLS_A[0]! + CALLS_A[1]!} calls, 3 threads in 3 processes\n`,
    );
    const timeline = readTimeline(join(dir, "two.json"));
    // The synthetic file's perf time is its TSC.
    assert.equal(timeline.otherData.clock, "ns");
    assert.equal(timeline.otherData.nsPerTick, 1);
    assertNested(timeline.traceEvents);
    const meta = timeline.traceEvents
      .filter((e) => e.ph === "M")
      .map((e) => `${e.name} ${e.pid}/${e.tid} ${e.args?.name}`);
    assert.deepEqual(meta.sort(), [
      "process_name 100/100 proc-a",
      "process_name 200/200 proc-b",
      "process_name 4294967295/4294967295 [unknown] cpu 0",
      "thread_name 100/100 proc-a",
      "thread_name 200/200 proc-b",
      "thread_name 4294967295/4294967295 [unknown] cpu 0",
    ]);
    // Per thread: how many frames of each kind and name.
    const frames = (pid: number) => {
      const names = timelineFrames(timeline.traceEvents)
        .filter((e) => e.pid === pid)
        .map((e) => `${e.cat} ${e.name}`);
      return [...new Set(names)].sort().map((k) => `${k} ${names.filter((x) => x === k).length}`);
    };
    // A: its root, its calls of f, the interrupts into the kernel (switch_mm) that return
    // to it; B: its loop, the interrupt it returns from, and the trace's asynchronous end.
    assert.deepEqual(frames(100), [
      `call f ${CALLS_A[0]! + CALLS_A[1]!}`,
      "interrupt switch_mm 2",
      "root main_a 1",
    ]);
    assert.deepEqual(frames(200), ["interrupt [interrupt] 1", "interrupt switch_mm 1", "root loop_b 1"]);
    // Who ran before B was seen: kernel code, then the gap of B's unmapped code.
    assert.deepEqual(frames(0xffffffff), ["root switch_mm 1"]);
    const folded = readFileSync(join(dir, "two.folded"), "utf8");
    assert.match(folded, /^proc-a;main_a;f \d+$/m);
    assert.match(folded, /^proc-b;loop_b \d+$/m);
    assert.equal(foldedTotal(join(dir, "two.folded")), insns);
  });

  test("--coverage names blocks by both binaries and the kernel, alone as with call stacks", () => {
    const data = file("cov.data", TRACE_TSC + 0x1000000000n);
    const alone = perf(dir, [...args, "-q", "--coverage", "alone.json", data]);
    assert.equal(alone.code, 0, alone.err);
    const stacks = perf(dir, [...args, "-q", "--coverage", "stacks.json", "--folded", "s.folded", data]);
    assert.equal(stacks.code, 0, stacks.err);
    const text = readFileSync(join(dir, "alone.json"), "utf8");
    assert.equal(text, readFileSync(join(dir, "stacks.json"), "utf8"));
    const blocks = (JSON.parse(text) as { blocks: { symbol?: string }[] }).blocks;
    const named = new Set(blocks.map((b) => b.symbol?.replace(/\+0x[0-9a-f]+$/, "")));
    for (const name of ["main_a", "f", "switch_mm"]) assert.ok(named.has(name), `${name} in ${[...named]}`);
  });
});

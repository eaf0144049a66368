/**
 * `ptkit perf --timeline-summary` / `--timeline-budget`: the timelines fit the budget,
 * the calls left out are the shortest (a power-of-two bound, said on stderr and in
 * otherData.summary) and every function's totals (calls, summed durations) are those
 * of the unbounded timeline once the left-out calls in the metadata are added back.
 * Besides: the bound the first decode chooses (summaryBound), and the note before a
 * timeline too large for viewers.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { FrameDurations, summaryBound } from "../../src/analysis/index.js";
import { runPerf } from "../../src/cli/perf/perf.js";
import { defaultAnalysisOptions } from "../../src/session/analysis-options.js";
import type { PerfOptions } from "../../src/session/perf-session.js";
import { timelineSizeNote } from "../../src/session/perf-timeline-summary.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";
import { CODE_CALLS, callTurns, insn, traceOf } from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-timeline-summary-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;

/**
 * A perf.data of CODE_CALLS's loop (main calls f) run `turns` times, then of a long
 * stretch of main alone: f's calls are short, main's frame long.
 */
function callsData(turns: number): string {
  const elf = elfWithSymbolsLayout(BASE, CODE_CALLS, [
    { name: "main", value: BASE, size: 0x10 },
    { name: "f", value: BASE + 0x10n, size: 1 },
  ]);
  const prog = join(dir, "calls.elf");
  writeFileSync(prog, elf.bytes);
  const exec = [insn(BASE, 5), ...callTurns(BASE, turns)];
  exec.push(JSON.stringify({ k: "end", ip: `0x${(BASE + 0xen).toString(16)}` }));
  const file = new PtFile({ perfScript: true })
    .comm(100, "calls", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec));
  const data = join(dir, "calls.data");
  writeFileSync(data, fileMode(file.built()));
  return data;
}

function perf(args: string[]): { err: string; code: number } {
  const io = captureIo(dir);
  const code = runPerf(args, io, EMPTY_HOME);
  return { err: io.err.join(""), code };
}

interface Summary {
  minDuration: number;
  budget: number;
  droppedFrames: number;
  dropped: Record<string, [number, number]>;
}

/** Calls and summed durations (ns) per function; with a summary, its left-out calls added back. */
function totals(path: string): { byName: Map<string, [number, number]>; summary?: Summary } {
  const json = JSON.parse(readFileSync(path, "utf8")) as {
    traceEvents: object[];
    otherData: { summary?: Summary };
  };
  const byName = new Map<string, [number, number]>();
  const add = (name: string, n: number, ns: number) => {
    const t = byName.get(name) ?? [0, 0];
    byName.set(name, [t[0] + n, t[1] + ns]);
  };
  for (const f of timelineFrames(json.traceEvents)) add(f.name, 1, f.stopNs - f.startNs);
  const summary = json.otherData.summary;
  for (const [name, [n, ns]] of Object.entries(summary?.dropped ?? {})) add(name, n, ns);
  return { byName, summary };
}

describe("--timeline-summary on a generated perf.data", () => {
  const data = callsData(2000);
  const full = join(dir, "full.json");
  assert.equal(perf(["-q", data, "--timeline", full]).code, 0);
  const fullBytes = statSync(full).size;

  test("a budget below the timeline's size: the file fits, f's calls are left out, totals kept", () => {
    const out = join(dir, "summary.json");
    const pftrace = join(dir, "summary.pftrace");
    const budget = 16 * 1024;
    assert.ok(fullBytes > 10 * budget, `${fullBytes}`);
    const r = perf(["-q", data, "--timeline", out, "--perfetto", pftrace, "--timeline-budget", "16K"]);
    assert.equal(r.code, 0, r.err);
    assert.ok(statSync(out).size <= budget, `${statSync(out).size}`);
    assert.ok(statSync(pftrace).size <= budget);
    assert.match(
      r.err,
      /--timeline-summary: timeline .*summary\.json: [\d.]+ KB for all \d+ frames, budget 16\.0 KB/,
    );
    assert.match(
      r.err,
      /calls shorter than (\d+) ns \(of the timeline's clock\) left out, \d+ of \d+ frames kept/,
    );
    const s = totals(out);
    const f = totals(full);
    assert.ok(s.summary);
    assert.equal(s.summary.budget, budget);
    // A power of two, and nearly every f call below it (a few straddle a timing packet).
    assert.equal(2 ** Math.round(Math.log2(s.summary.minDuration)), s.summary.minDuration);
    assert.ok(s.summary.dropped.f![0] > 1900, `${s.summary.dropped.f}`);
    assert.equal(
      s.summary.droppedFrames,
      Object.values(s.summary.dropped).reduce((n, [c]) => n + c, 0),
    );
    assert.deepEqual([...s.byName.entries()].sort(), [...f.byName.entries()].sort());
  });

  test("a budget the timeline fits: nothing left out, the same frames", () => {
    const out = join(dir, "fits.json");
    const r = perf(["-q", data, "--timeline", out, "--timeline-summary"]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, /every call fits/);
    const s = totals(out);
    assert.equal(s.summary?.minDuration, 0);
    assert.equal(s.summary?.droppedFrames, 0);
    assert.deepEqual([...s.byName.entries()].sort(), [...totals(full).byName.entries()].sort());
  });

  test("a bad budget is refused", () => {
    const r = perf([data, "--timeline", join(dir, "x.json"), "--timeline-budget", "12Q"]);
    assert.equal(r.code, 1);
    assert.match(r.err, /--timeline-budget: want a size of at least 1K/);
  });
});

test("summaryBound: the smallest power of two whose longer frames fit", () => {
  const d = new FrameDurations();
  const track = { index: 0, pid: 1, tid: 1 } as never;
  // 100 frames of 3 units, 10 of 100, 1 of 5000.
  const frames = [...Array<number>(100).fill(3), ...Array<number>(10).fill(100), 5000];
  for (const len of frames) {
    d.enter(track, 1, 0 as never, 0, 0, 1000);
    d.exit(track, 1, undefined, 1000 + len);
  }
  assert.equal(d.frames, 111);
  // 10 bytes a frame: all fit in 1110; 110 bytes keep the 11 longest (bound 4: 3 < 4 <= 100).
  assert.deepEqual(summaryBound(d, 1110, 1110), { bound: 0, kept: 111 });
  assert.deepEqual(summaryBound(d, 1110, 110), { bound: 4, kept: 11 });
  assert.deepEqual(summaryBound(d, 1110, 10), { bound: 128, kept: 1 });
  assert.deepEqual(summaryBound(d, 1110, 5), { bound: 8192, kept: 0 });
});

test("the note before writing a timeline too large for viewers (from the perf.data's size)", () => {
  const options = (timeline?: string, perfetto?: string, summary = false): PerfOptions =>
    ({
      analysis: { ...defaultAnalysisOptions(), timeline, perfetto, timelineSummary: summary },
    }) as PerfOptions;
  assert.equal(timelineSizeNote(options("a.json"), 10 << 20), undefined);
  assert.match(
    timelineSizeNote(options("a.json"), 100 << 20)!,
    /--timeline a\.json: a perf\.data of 100 MB makes a JSON timeline of about 1400 MB, more than chrome:\/\/tracing loads \(256 MB\): --timeline-summary writes one that fits/,
  );
  assert.equal(timelineSizeNote(options(undefined, "a.pftrace"), 100 << 20), undefined);
  assert.match(
    timelineSizeNote(options(undefined, "a.pftrace"), 300 << 20)!,
    /more than the Perfetto UI loads/,
  );
  assert.equal(timelineSizeNote(options("a.json", undefined, true), 100 << 20), undefined);
});

/**
 * `ptkit perf --perfetto` on the HASE control_flow capture: decoded with the
 * hand-written Perfetto schema, its slices are the JSON timeline's frames; its
 * timestamps are perf time (the times `--jsonl` prints, as perf script does), and so
 * are the JSON's with --perf-time; it is smaller than the JSON. --min-duration drops
 * exactly the frames shorter than the bound (and their callees) from both, and
 * --time-range (perf time) holds both timelines inside the range.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { keptFrames } from "../analysis/min-duration.js";
import { perfettoTimeline } from "../analysis/perfetto-frames.js";
import { type TimelineEvent, type TimelineFrame, timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-perfetto-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const RUN = ["real/hase", "2018-05/control_flow-20180515T180451"] as const;

function perf(args: string[]): { out: string; err: string; code: number } {
  const io = captureIo(dir);
  const code = runPerf(args, io, EMPTY_HOME);
  return { out: io.out.join(""), err: io.err.join(""), code };
}

interface Json {
  traceEvents: TimelineEvent[];
  otherData: { tscBase: string; origin?: number };
}

const key = (f: TimelineFrame) =>
  `${f.pid}/${f.tid} ${f.name} ${f.cat} ${f.startNs}-${f.stopNs} from ${f.caller} ${f.end ?? "return"}`;

/** perf time "s.nnnnnnnnn" in ns. */
const ns = (time: string) => Number(time.replace(".", ""));

describe("ptkit perf --perfetto on the HASE control_flow capture", { skip: skipUnlessCorpus(...RUN) }, () => {
  const data = () => corpusPath(...RUN, "perf.data.1")!;
  const symfs = () => corpusPath(...RUN, "binaries")!;
  /** Both timelines of the capture, with `extra` options. */
  const timelines = (name: string, extra: string[]) => {
    const json = join(dir, `${name}.json`);
    const proto = join(dir, `${name}.pftrace`);
    const r = perf(["--symfs", symfs(), "-q", "--timeline", json, "--perfetto", proto, ...extra, data()]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.err, "");
    assert.match(r.out, new RegExp(`^wrote ${json}, ${proto}: \\d+ instructions`));
    return {
      json: JSON.parse(readFileSync(json, "utf8")) as Json,
      proto: perfettoTimeline(readFileSync(proto)),
      sizes: [statSync(json).size, statSync(proto).size] as const,
    };
  };

  test("the slices are the JSON's frames, in perf time, in fewer bytes", (t) => {
    const { json, proto, sizes } = timelines("cf", ["--perf-time"]);
    const frames = timelineFrames(json.traceEvents);
    assert.ok(frames.length > 20);
    assert.deepEqual(proto.frames.map(key), frames.map(key));
    assert.deepEqual(
      proto.threads.map((th) => `${th.pid}/${th.tid} ${th.name} ${th.process}`),
      ["11181/11181 control_flow control_flow"],
    );
    // Time 0 is the first TSC: --jsonl prints its perf time.
    const printed = perf(["--symfs", symfs(), "--jsonl", data()]).out.split("\n");
    const first = printed.find((l) => l.includes(`"tsc":"${json.otherData.tscBase}"`));
    assert.ok(first, json.otherData.tscBase);
    const origin = ns((JSON.parse(first) as { time: string }).time);
    assert.equal(json.otherData.origin, origin);
    assert.equal(Math.min(...proto.frames.map((f) => f.startNs)), origin);
    // Without --perf-time the JSON counts from the first TSC; the Perfetto file stays in perf time.
    const relative = timelines("cf-relative", []);
    assert.equal(relative.json.otherData.origin, undefined);
    assert.deepEqual(
      timelineFrames(relative.json.traceEvents).map((f) =>
        key({ ...f, startNs: f.startNs + origin, stopNs: f.stopNs + origin }),
      ),
      frames.map(key),
    );
    assert.deepEqual(relative.proto.frames.map(key), frames.map(key));
    t.diagnostic(`JSON ${sizes[0]} bytes, Perfetto ${sizes[1]} bytes`);
    assert.ok(sizes[1] < sizes[0] / 2, `${sizes}`);
  });

  test("--min-duration drops exactly the shorter frames and their callees, from both", () => {
    const all = timelines("cf-all", []);
    for (const [bound, min] of [
      ["100ns", 100],
      ["0.5us", 500],
      ["2000", 2000],
    ] as const) {
      const cut = timelines(`cf-${min}`, ["--min-duration", bound]);
      const expected = keptFrames(all.json.traceEvents, min);
      assert.ok(expected.length > 0 && expected.length < timelineFrames(all.json.traceEvents).length, bound);
      assert.deepEqual(timelineFrames(cut.json.traceEvents).map(key), expected.map(key));
      const origin = Math.min(...all.proto.frames.map((f) => f.startNs));
      assert.deepEqual(
        cut.proto.frames.map((f) => key({ ...f, startNs: f.startNs - origin, stopNs: f.stopNs - origin })),
        expected.map(key),
      );
    }
  });

  test("--time-range holds both timelines inside it", () => {
    const all = timelines("cf-whole", []);
    const starts = [...new Set(all.proto.frames.map((f) => f.startNs))].sort((a, b) => a - b);
    const [from, to] = [starts[5]!, starts[starts.length - 5]!];
    const text = (v: number) => `${Math.floor(v / 1e9)}.${`${v % 1e9}`.padStart(9, "0")}`;
    const cut = timelines("cf-range", ["--time-range", `${text(from)},${text(to)}`]);
    const frames = cut.proto.frames;
    assert.ok(frames.length > 0 && frames.length < all.proto.frames.length);
    for (const f of frames)
      assert.ok(f.startNs >= from && f.stopNs <= to, `${f.name} ${f.startNs}-${f.stopNs} in ${from}-${to}`);
    assert.equal(timelineFrames(cut.json.traceEvents).length, frames.length);
  });

  test("bad --min-duration", () => {
    for (const bad of ["abc", "0", "-5us", "10 us", "5h"]) {
      const r = perf(["--min-duration", bad, "--timeline", "x.json", data()]);
      assert.equal(r.code, 1, bad);
      assert.match(r.err, /--min-duration: want a duration such as 10us/, bad);
    }
  });
});

/**
 * `ptkit flow --perfetto` on the bundled sample: the Perfetto timeline's slices are
 * the JSON timeline's frames (times as the JSON's: from the trace's first TSC), it is
 * the smaller file, and --min-duration leaves the same frames out of both;
 * --perf-time is ptkit perf's alone.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { keptFrames } from "../analysis/min-duration.js";
import { perfettoTimeline } from "../analysis/perfetto-frames.js";
import { SAMPLE_DIR, SAMPLE_SKIP } from "../analysis/sample-timeline.js";
import { type TimelineEvent, type TimelineFrame, timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-flow-perfetto-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const key = (f: TimelineFrame) =>
  `${f.pid}/${f.tid} ${f.name} ${f.cat} ${f.startNs}-${f.stopNs} from ${f.caller} ${f.end ?? "return"}`;

/** `ptkit flow` on the sample with `extra` options: exit status and stderr. */
async function flow(extra: string[]): Promise<{ code: number; err: string }> {
  const about = JSON.parse(readFileSync(join(SAMPLE_DIR, "sample.json"), "utf8"));
  const d = about.decode;
  const io = captureIo(dir);
  const code = await main(
    [
      "flow",
      ...["--mtc-freq", `${d.mtcFreq}`, "--nom-freq", `${d.nomFreq}`],
      ...["--cpuid-0x15.eax", `${d.cpuid15Eax}`, "--cpuid-0x15.ebx", `${d.cpuid15Ebx}`],
      ...["--elf", join(SAMPLE_DIR, about.program), "--pt", join(SAMPLE_DIR, about.trace)],
      "--quiet",
      ...extra,
    ],
    io,
  );
  return { code, err: io.err.join("") };
}

async function both(name: string, extra: string[] = []) {
  const r = await flow(["--timeline", `${name}.json`, "--perfetto", `${name}.pftrace`, ...extra]);
  assert.equal(r.code, 0, r.err);
  const json = readFileSync(join(dir, `${name}.json`));
  const proto = readFileSync(join(dir, `${name}.pftrace`));
  const events = (JSON.parse(json.toString("utf8")) as { traceEvents: TimelineEvent[] }).traceEvents;
  return {
    events,
    frames: timelineFrames(events),
    proto: perfettoTimeline(proto),
    sizes: [json.length, proto.length],
  };
}

test("the sample: the Perfetto slices are the JSON's frames, in fewer bytes", {
  skip: SAMPLE_SKIP,
}, async (t) => {
  const { frames, proto, sizes } = await both("sample");
  assert.ok(frames.length > 100);
  assert.deepEqual(proto.frames.map(key), frames.map(key));
  t.diagnostic(`JSON ${sizes[0]} bytes, Perfetto ${sizes[1]} bytes`);
  assert.ok(sizes[1]! < sizes[0]! / 2, `${sizes}`);
});

test("the sample with --min-duration: the same frames left out of both", { skip: SAMPLE_SKIP }, async () => {
  const all = await both("all");
  const cut = await both("cut", ["--min-duration", "1us"]);
  const expected = keptFrames(all.events, 1000);
  assert.ok(expected.length > 0 && expected.length < all.frames.length / 2);
  assert.deepEqual(cut.frames.map(key), expected.map(key));
  assert.deepEqual(cut.proto.frames.map(key), expected.map(key));
});

test("--perf-time is ptkit perf's", { skip: SAMPLE_SKIP }, async () => {
  const r = await flow(["--timeline", "x.json", "--perf-time"]);
  assert.equal(r.code, 1);
  assert.match(r.err, /unknown option: --perf-time/);
});

/**
 * ptkit's function-call timeline in a real trace viewer: `ptkit flow --timeline` of
 * the bundled sample, loaded into speedscope in headless Chromium.
 * speedscope must import it as a trace-event profile, list every function the timeline
 * has, and nest the frames as the timeline does: each function's total and self time
 * in its Sandwich table equal those computed here from the file (timeline-model.ts).
 */
// test:quick skips this file: runs headless Chromium.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  CHROMIUM_SKIP,
  launchChromium,
  type StaticServer,
  servedFile,
  serveFiles,
} from "../../tools/browser/chromium.js";
import {
  openInSpeedscope,
  readSandwich,
  type SandwichRow,
  speedscopeFiles,
} from "../../tools/browser/speedscope.js";
import { SAMPLE_SKIP, sampleTimeline } from "../analysis/sample-timeline.js";
import { type TimelineModel, type TraceEvent, timelineModel } from "./timeline-model.js";

describe("ptkit's timeline in speedscope", { skip: CHROMIUM_SKIP || SAMPLE_SKIP }, () => {
  let model: TimelineModel;
  let server: StaticServer;
  let browser: Browser;
  let page: Page;
  let importer: string;
  let rows: SandwichRow[];
  /** speedscope's complaints about frames that do not nest. */
  const nesting: string[] = [];

  before(async () => {
    const json = await sampleTimeline();
    model = timelineModel((JSON.parse(json) as { traceEvents: TraceEvent[] }).traceEvents);
    const files = speedscopeFiles();
    files.set("/timeline.json", servedFile("timeline.json", json));
    server = await serveFiles(files);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on("console", (m) => {
      if (/Tried to end|still open/.test(m.text())) nesting.push(m.text());
    });
    importer = await openInSpeedscope(page, server.url, `${server.url}timeline.json`, "sample.pt");
    rows = await readSandwich(page);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test("imports it as a trace-event profile with every function by name", () => {
    assert.equal(importer, "Trace Event Format");
    assert.deepEqual(model.threads, ["0:0"]);
    assert.ok(model.frames > 7000, `${model.frames} frames`);
    for (const name of ["_start", "main", "quicksort", "partition", "fib", "fnv1a"]) {
      assert.ok(model.functions.has(name), name);
    }
    // No frame is named after its args (as '_start {"end":"end"}' was).
    assert.deepEqual(
      rows.filter((r) => r.name.includes("{")).map((r) => r.name),
      [],
    );
    assert.deepEqual(rows.map((r) => r.name).sort(), [...model.functions.keys()].sort());
  });

  // Begin/end events: the nesting is the file's, also for frames that start or end together.
  test("nests the frames as the timeline does: total and self time of every function", () => {
    assert.deepEqual(nesting, []);
    const wrong: string[] = [];
    for (const row of rows) {
      const want = model.functions.get(row.name)!;
      const close = (shown: number, ns: number): boolean =>
        Math.abs(shown - ns / 1000) <= row.precision + 1e-9;
      if (!close(row.total, want.total) || !close(row.self, want.self)) {
        wrong.push(`${row.name}: shown ${row.total}/${row.self} µs, timeline ${want.total}/${want.self} ns`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});

/**
 * The timed walk's log (analysis/walk-log.ts): every call a walk makes to its
 * WalkTime and feed comes back from the log in order, across chunks whose buffers
 * the sink hands over (as to another thread), and an event with every field of
 * PtEvent. (Whole walks logged and replayed: test/perf/perf-fast-path.test.ts.)
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FastCoverage,
  LoggedTime,
  replayWalk,
  type WalkEnd,
  type WalkFeed,
  WalkLogWriter,
  type WalkTime,
} from "../../src/analysis/index.js";
import { EVENT_WORDS, readEvent, writeEvent } from "../../src/analysis/walk-log.js";
import type { Clock } from "../../src/event/clock.js";
import { PtEvent } from "../../src/event/index.js";
import type { DecisionGraph } from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";

/** A PtEvent whose fields all differ from a fresh one's (and from each other). */
function everyField(): PtEvent {
  const ev = new PtEvent();
  let n = 1;
  for (const key of Object.keys(ev) as (keyof PtEvent)[]) {
    const v = ev[key];
    if (typeof v === "boolean") (ev as unknown as Record<string, unknown>)[key] = !v;
    else if (typeof v === "number") (ev as unknown as Record<string, unknown>)[key] = 0xfffff000 + n++;
  }
  return ev;
}

/**
 * A WalkTime (and its feed) that writes down every call made to it, answering as
 * told: `waits` true that many times in a row, `lost` as `goesOn`.
 */
class Recorder implements WalkTime {
  readonly calls: string[] = [];
  readonly clock = {} as Clock;
  readonly ticks = true;
  readonly cr3 = false;
  waitsLeft = 0;
  goesOn = true;
  readonly feed: WalkFeed = {
    run: (...a: number[]) => void this.calls.push(`run ${a.join(" ")}`),
    insn: (...a: number[]) => void this.calls.push(`insn ${a.join(" ")}`),
    node: (hi, lo, n, endHi, endLo, size, fclass) =>
      void this.calls.push(`node ${[hi, lo, n, endHi, endLo, size, fclass].join(" ")}`),
    event: (ev: PtEvent) => void this.calls.push(`event ${JSON.stringify(ev)}`),
  };
  get image(): Image {
    return {} as Image;
  }
  graph(): DecisionGraph {
    return {} as DecisionGraph;
  }
  at(hi: number, lo: number): void {
    this.calls.push(`at ${hi} ${lo}`);
  }
  ready(): WalkFeed {
    this.calls.push("ready");
    return this.feed;
  }
  waits(hi: number, lo: number): boolean {
    this.calls.push(`waits ${hi} ${lo}`);
    if (this.waitsLeft === 0) return false;
    this.waitsLeft--;
    return true;
  }
  lost(hi: number, lo: number, offset: number): boolean {
    this.calls.push(`lost ${hi} ${lo} ${offset}`);
    return this.goesOn;
  }
  resumed(hi: number, lo: number): void {
    this.calls.push(`resumed ${hi} ${lo}`);
  }
}

/** What a walk would do to `time`: many of every call (to fill several chunks). */
function walkLike(time: WalkTime, ev: PtEvent): void {
  for (let i = 0; i < 3000; i++) {
    const hi = 0xffffffff - i;
    time.at(hi, i);
    const feed = time.ready();
    feed.run(hi, i, i + 1, hi, i + 2);
    feed.insn(hi, i, 5, i & 15);
    feed.node!(hi, i, 7, hi, i + 9, 2, 3, i, {} as DecisionGraph);
    if (i % 100 === 0) feed.event(ev);
    time.waits?.(hi, i + 1);
    if (i % 1000 === 0) {
      time.lost?.(hi, i, 0x1_0000_0000 + i);
      time.resumed?.(hi, i + 3);
    }
  }
}

/**
 * The log of {@link walkLike} on a recorder, its chunks' buffers taken from the writer
 * (transferred, as to a thread); and the calls {@link walkLike} makes to a recorder fed
 * directly, which the replay must make.
 */
function logged(ev: PtEvent, end: WalkEnd): { chunks: Float64Array[]; calls: string[] } {
  const chunks: Float64Array[] = [];
  let ended: WalkEnd | undefined;
  const writer = new WalkLogWriter({
    chunk: (words) => chunks.push(structuredClone(words, { transfer: [words.buffer as ArrayBuffer] })),
    end: (r) => (ended = r),
  });
  walkLike(new LoggedTime(new Recorder(), writer), ev);
  writer.end(end);
  assert.deepEqual(ended, end);
  const direct = new Recorder();
  walkLike(direct, ev);
  return { chunks, calls: direct.calls };
}

describe("the timed walk's log", () => {
  test("an event keeps every field of PtEvent", () => {
    const ev = everyField();
    assert.equal(EVENT_WORDS, Object.keys(ev).length, "a field of PtEvent the log does not write");
    const words = new Float64Array(1 + EVENT_WORDS);
    assert.equal(writeEvent(words, 1, ev), 1 + EVENT_WORDS);
    assert.deepEqual(readEvent(words, 1, new PtEvent()), ev);
  });

  test("the replay makes the walk's calls in order, across chunks handed over", () => {
    const ev = everyField();
    const end = Object.assign(new FastCoverage(), { insns: 12345, calls: 67 });
    const { chunks, calls } = logged(ev, end);
    assert.ok(chunks.length > 5, `${chunks.length} chunks`);
    const there = new Recorder();
    let next = 0;
    const steps = replayWalk(there, () => (next < chunks.length ? chunks[next++]! : end));
    let r = steps.next();
    while (r.done !== true) r = steps.next();
    assert.equal(r.value.status, 0);
    assert.equal(r.value.insns, 12345);
    assert.deepEqual(there.calls, calls);
  });

  test("the replay waits where the other side's streams go first, and stops where an answer differs", () => {
    const ev = everyField();
    const { chunks } = logged(ev, new FastCoverage());
    const there = new Recorder();
    there.waitsLeft = 2;
    let next = 0;
    const source = () => (next < chunks.length ? chunks[next++]! : new FastCoverage());
    const steps = replayWalk(there, source);
    // Two turns of other streams first: the replay yields at the first wait, twice.
    assert.equal(steps.next().done, false);
    assert.equal(steps.next().done, false);
    there.goesOn = false;
    let r = steps.next();
    while (r.done !== true) r = steps.next();
    assert.equal(r.value.status, -1);
    assert.match(r.value.reason, /a stop where code is missing/);
  });
});

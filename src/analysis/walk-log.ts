/**
 * The timed walk (coverage-decode.ts, {@link timedWalk}) on one thread, what it feeds
 * on another: a walk whose {@link WalkTime} and {@link WalkFeed} are a {@link LoggedTime}
 * writes every call it makes to them (times reported, thread turns asked for, feeds
 * asked for, runs, instructions, nodes, events, stops where code is missing) as
 * numbers into chunks of a log; {@link replayWalk} makes the same calls from the log,
 * in the same order, to the WalkTime of another thread, as the walk would have. The
 * walk's part (packets, decision graph, clock) and the part of what it feeds (call
 * stacks, their outputs) then run at once (`ptkit perf`'s parallel walk,
 * session/perf-graph.ts).
 *
 * What the walk asks of its WalkTime and feed and uses (a thread turn, a feed, whether
 * perf's decoder goes on where code is missing) is answered on the walking side by a
 * WalkTime that moves the same stream the same way; the replay checks that the other
 * side answers the same (a turn is waited for there, not here) and stops the replay
 * where it does not (status -1: the caller decodes the general way).
 *
 * The log (between threads of one process, never kept): records of float64 words, each a tag then its words:
 * READY; RUN hi lo count lastHi lastLo; INSN hi lo size fclass; NODE hi lo n endHi
 * endLo size fclass; EVENT and {@link EVENT_WORDS} words (see writeEvent); AT hi lo;
 * WAITS hi lo; LOST hi lo offset went (1 or 0); RESUMED hi lo. A record is never cut
 * between chunks. The walk's outcome ends the log ({@link WalkLogSink.end}).
 */

import { mutableFields } from "../base/halves.js";
import type { Clock } from "../event/clock.js";
import { PtEvent } from "../event/types.js";
import type { DecisionGraph } from "../flow/decision-graph.js";
import type { Image } from "../image/image.js";
import { FastCoverage, type WalkFeed, type WalkTime } from "./coverage-decode.js";

const READY = 1;
const RUN = 2;
const INSN = 3;
const NODE = 4;
const EVENT = 5;
const AT = 6;
const WAITS = 7;
const LOST = 8;
const RESUMED = 9;

/** The words of an event record after its tag (see {@link writeEvent}). */
export const EVENT_WORDS = 35;
/** The longest record. */
const MAX_RECORD = 1 + EVENT_WORDS;

/** Where a logged walk's chunks go, and its outcome. */
export interface WalkLogSink {
  /** A full chunk: `words` (a whole number of records), handed over (not written to again). */
  chunk(words: Float64Array): void;
  /** The walk ended with `result`. */
  end(result: WalkEnd): void;
}

/** The first chunk's words: small, so that the replay starts soon; each next one twice as large, up to {@link CHUNK_WORDS}. */
const FIRST_CHUNK = 1 << 10;
const CHUNK_WORDS = 1 << 16;

/** The log's writer: records into chunks, each handed to the sink when the next record would not fit. */
export class WalkLogWriter {
  private words: Float64Array = new Float64Array(FIRST_CHUNK);
  private at = 0;

  constructor(private readonly sink: WalkLogSink) {
    // Each chunk is a new array.
    mutableFields(this, ["words"]);
  }

  /** Room for a record of up to {@link MAX_RECORD} words: the words, at {@link at}. */
  private room(): Float64Array {
    if (this.at + MAX_RECORD > this.words.length) this.flush();
    return this.words;
  }

  /** The records so far to the sink. */
  flush(): void {
    if (this.at === 0) return;
    // (Read before the chunk goes: a sink may hand its buffer over, emptying the array.)
    const next = Math.min(CHUNK_WORDS, 2 * this.words.length);
    this.sink.chunk(this.words.subarray(0, this.at));
    this.words = new Float64Array(next);
    this.at = 0;
  }

  /** The log ends: the records, then the outcome. */
  end(result: WalkEnd): void {
    this.flush();
    this.sink.end(result);
  }

  tag(tag: number): void {
    const w = this.room();
    w[this.at++] = tag;
  }

  two(tag: number, a: number, b: number): void {
    const w = this.room();
    const i = this.at;
    w[i] = tag;
    w[i + 1] = a;
    w[i + 2] = b;
    this.at = i + 3;
  }

  four(tag: number, a: number, b: number, c: number, d: number): void {
    const w = this.room();
    const i = this.at;
    w[i] = tag;
    w[i + 1] = a;
    w[i + 2] = b;
    w[i + 3] = c;
    w[i + 4] = d;
    this.at = i + 5;
  }

  run(hi: number, lo: number, count: number, lastHi: number, lastLo: number): void {
    const w = this.room();
    const i = this.at;
    w[i] = RUN;
    w[i + 1] = hi;
    w[i + 2] = lo;
    w[i + 3] = count;
    w[i + 4] = lastHi;
    w[i + 5] = lastLo;
    this.at = i + 6;
  }

  node(hi: number, lo: number, n: number, endHi: number, endLo: number, size: number, fclass: number): void {
    const w = this.room();
    const i = this.at;
    w[i] = NODE;
    w[i + 1] = hi;
    w[i + 2] = lo;
    w[i + 3] = n;
    w[i + 4] = endHi;
    w[i + 5] = endLo;
    w[i + 6] = size;
    w[i + 7] = fclass;
    this.at = i + 8;
  }

  event(ev: PtEvent): void {
    const w = this.room();
    w[this.at] = EVENT;
    this.at = writeEvent(w, this.at + 1, ev);
  }
}

/**
 * Every field of `ev` into `w` from `at`: where it ends ({@link EVENT_WORDS} on).
 * (test/analysis/walk-log.test.ts checks that no field of PtEvent is left out.)
 */
export function writeEvent(w: Float64Array, at: number, ev: PtEvent): number {
  w[at] = ev.type;
  w[at + 1] = ev.ipSuppressed ? 1 : 0;
  w[at + 2] = ev.statusUpdate ? 1 : 0;
  w[at + 3] = ev.psbOffset;
  w[at + 4] = ev.hasTsc ? 1 : 0;
  w[at + 5] = ev.tscHi;
  w[at + 6] = ev.tscLo;
  w[at + 7] = ev.lostMtc;
  w[at + 8] = ev.lostCyc;
  w[at + 9] = ev.timingSeq;
  w[at + 10] = ev.ipHi;
  w[at + 11] = ev.ipLo;
  w[at + 12] = ev.fromHi;
  w[at + 13] = ev.fromLo;
  w[at + 14] = ev.fromTscHi;
  w[at + 15] = ev.fromTscLo;
  w[at + 16] = ev.fromTimingSeq;
  w[at + 17] = ev.payloadHi;
  w[at + 18] = ev.payloadLo;
  w[at + 19] = ev.payload2Hi;
  w[at + 20] = ev.payload2Lo;
  w[at + 21] = ev.fullIps;
  w[at + 22] = ev.flags;
  w[at + 23] = ev.mode;
  w[at + 24] = ev.size;
  w[at + 25] = ev.vector;
  w[at + 26] = ev.hints;
  w[at + 27] = ev.ext;
  w[at + 28] = ev.state;
  w[at + 29] = ev.subState;
  w[at + 30] = ev.last;
  w[at + 31] = ev.deepest;
  w[at + 32] = ev.ratio;
  w[at + 33] = ev.trbv;
  w[at + 34] = ev.icnt;
  return at + EVENT_WORDS;
}

/** {@link writeEvent}'s words at `at` into `ev`: `ev`. */
export function readEvent(w: Float64Array, at: number, ev: PtEvent): PtEvent {
  ev.type = w[at]! as PtEvent["type"];
  ev.ipSuppressed = w[at + 1] === 1;
  ev.statusUpdate = w[at + 2] === 1;
  ev.psbOffset = w[at + 3]!;
  ev.hasTsc = w[at + 4] === 1;
  ev.tscHi = w[at + 5]!;
  ev.tscLo = w[at + 6]!;
  ev.lostMtc = w[at + 7]!;
  ev.lostCyc = w[at + 8]!;
  ev.timingSeq = w[at + 9]!;
  ev.ipHi = w[at + 10]!;
  ev.ipLo = w[at + 11]!;
  ev.fromHi = w[at + 12]!;
  ev.fromLo = w[at + 13]!;
  ev.fromTscHi = w[at + 14]!;
  ev.fromTscLo = w[at + 15]!;
  ev.fromTimingSeq = w[at + 16]!;
  ev.payloadHi = w[at + 17]!;
  ev.payloadLo = w[at + 18]!;
  ev.payload2Hi = w[at + 19]!;
  ev.payload2Lo = w[at + 20]!;
  ev.fullIps = w[at + 21]!;
  ev.flags = w[at + 22]!;
  ev.mode = w[at + 23]!;
  ev.size = w[at + 24]!;
  ev.vector = w[at + 25]!;
  ev.hints = w[at + 26]!;
  ev.ext = w[at + 27]!;
  ev.state = w[at + 28]!;
  ev.subState = w[at + 29]!;
  ev.last = w[at + 30]!;
  ev.deepest = w[at + 31]!;
  ev.ratio = w[at + 32]!;
  ev.trbv = w[at + 33]!;
  ev.icnt = w[at + 34]!;
  return ev;
}

/**
 * The feed a logged walk feeds: each call a record. Like the feeds of ptkit perf's
 * analyses (a FlowTracker) it takes nodes whole and makes something of jumps.
 */
class LoggedFeed implements WalkFeed {
  constructor(private readonly log: WalkLogWriter) {}

  run(hi: number, lo: number, count: number, lastHi: number, lastLo: number): void {
    this.log.run(hi, lo, count, lastHi, lastLo);
  }

  insn(hi: number, lo: number, size: number, fclass: number): void {
    this.log.four(INSN, hi, lo, size, fclass);
  }

  node(hi: number, lo: number, n: number, endHi: number, endLo: number, size: number, fclass: number): void {
    this.log.node(hi, lo, n, endHi, endLo, size, fclass);
  }

  event(ev: PtEvent): void {
    this.log.event(ev);
  }
}

/**
 * A WalkTime that logs what the walk asks of `time` (which answers it: the stream's
 * own turns, never waiting for another's) and gives it the logged feed. It has
 * {@link WalkTime.waits} where `time` has (where the replay's side takes turns).
 */
export class LoggedTime implements WalkTime {
  readonly clock: Clock;
  readonly ticks: boolean;
  readonly cr3: boolean;
  readonly feed: WalkFeed;
  readonly waits?: (hi: number, lo: number) => boolean;

  constructor(
    private readonly time: WalkTime,
    private readonly log: WalkLogWriter,
  ) {
    this.clock = time.clock;
    this.ticks = time.ticks;
    this.cr3 = time.cr3;
    this.feed = new LoggedFeed(log);
    const waits = time.waits;
    if (waits !== undefined)
      this.waits = (hi, lo) => {
        log.two(WAITS, hi, lo);
        return waits.call(time, hi, lo);
      };
  }

  at(hi: number, lo: number): void {
    this.log.two(AT, hi, lo);
    this.time.at(hi, lo);
  }

  ready(): WalkFeed {
    this.log.tag(READY);
    this.time.ready();
    return this.feed;
  }

  get image(): Image {
    return this.time.image;
  }

  graph(image: Image, maxNodes: number, maxWalk: number): DecisionGraph {
    return this.time.graph!(image, maxNodes, maxWalk);
  }

  lost(hi: number, lo: number, offset: number): boolean {
    const went = this.time.lost?.(hi, lo, offset) === true;
    this.log.four(LOST, hi, lo, offset, went ? 1 : 0);
    return went;
  }

  resumed(hi: number, lo: number): void {
    this.log.two(RESUMED, hi, lo);
    this.time.resumed?.(hi, lo);
  }
}

/** A walk's outcome as the end of its log gives it (FastCoverage's fields, a plain object or one). */
export type WalkEnd = Pick<FastCoverage, "status" | "offset" | "reason" | "insns" | "calls" | "errors">;

/** A logged walk's chunks as they come (blocking until the next is there), then its outcome. */
export type WalkLogSource = () => Float64Array | WalkEnd;

/**
 * The calls a logged walk made to its WalkTime and feeds, made to `time` and the feeds
 * it gives, in order: a generator as the walk is, which yields where the walk would
 * (where `time` says another stream goes first), and returns the walk's outcome; or
 * status -1 where `time` answers other than the walking side's did (or the log is
 * not one).
 */
export function* replayWalk(time: WalkTime, next: WalkLogSource): Generator<void, FastCoverage, void> {
  const ev = new PtEvent();
  let feed: WalkFeed | undefined;
  for (;;) {
    const w = next();
    if (!(w instanceof Float64Array)) return Object.assign(new FastCoverage(), w);
    const n = w.length;
    let i = 0;
    while (i < n) {
      const tag = w[i]!;
      if (tag === NODE) {
        // (No node id nor graph here: a feed that keeps things by graph node, such as
        // coverage's, is not fed from a log.)
        feed!.node!(
          w[i + 1]!,
          w[i + 2]!,
          w[i + 3]!,
          w[i + 4]!,
          w[i + 5]!,
          w[i + 6]!,
          w[i + 7]!,
          -1,
          undefined!,
        );
        i += 8;
      } else if (tag === READY) {
        feed = time.ready();
        i += 1;
      } else if (tag === RUN) {
        feed!.run(w[i + 1]!, w[i + 2]!, w[i + 3]!, w[i + 4]!, w[i + 5]!);
        i += 6;
      } else if (tag === INSN) {
        feed!.insn(w[i + 1]!, w[i + 2]!, w[i + 3]!, w[i + 4]!);
        i += 5;
      } else if (tag === EVENT) {
        feed!.event(readEvent(w, i + 1, ev));
        i += 1 + EVENT_WORDS;
      } else if (tag === AT) {
        time.at(w[i + 1]!, w[i + 2]!);
        i += 3;
      } else if (tag === WAITS) {
        const hi = w[i + 1]!;
        const lo = w[i + 2]!;
        i += 3;
        // (The walk asks again when it goes on.)
        while (time.waits!(hi, lo)) yield;
      } else if (tag === LOST) {
        const went = time.lost?.(w[i + 1]!, w[i + 2]!, w[i + 3]!) === true;
        if (went !== (w[i + 4] === 1)) return unlike("a stop where code is missing");
        i += 5;
      } else if (tag === RESUMED) {
        time.resumed?.(w[i + 1]!, w[i + 2]!);
        i += 3;
      } else return unlike("a log it does not read");
    }
  }
}

/** The outcome of a replay that cannot go on: the general decode's. */
function unlike(what: string): FastCoverage {
  return FastCoverage.handedOver(`the parallel walk's replay met ${what}`);
}

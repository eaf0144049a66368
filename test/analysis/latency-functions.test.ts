/**
 * What the latency sink counts as one function: a frame name within a naming scope,
 * however the frames got it. Random call sequences over addresses whose names collide
 * (a root frame in a function's middle reads as the function, a call to its start too;
 * two processes' scopes) against a model that keys every frame by its name, with the
 * frame names unlimited, limited to a few entries (most frames named past the limit,
 * by their text alone) and limited part of the way through (both kinds of frame for
 * one function).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallLatency,
  FrameEnd,
  FrameKind,
  FrameNames,
  type LatencySummary,
  type Symbolizer,
  ThreadTrack,
} from "../../src/analysis/index.js";
import { functionsSymbolizer, prng } from "./made-symbols.js";

const BASE = 0x400000;
const FUNCTIONS = ["main", "f", "g", "h"];
const SIZE = 0x10;

const symbolizer = (): Symbolizer => functionsSymbolizer(FUNCTIONS, BASE, SIZE);

interface Op {
  enter: boolean;
  track: number;
  depth: number;
  kind: FrameKind;
  lo: number;
  time: number;
  end: FrameEnd;
}

/** The frame at `depth` of thread `track` ends at `time`, by `end`. */
const exit = (track: number, depth: number, time: number, end: FrameEnd): Op => ({
  enter: false,
  track,
  depth,
  kind: 0,
  lo: 0,
  time,
  end,
});

/** Two threads of two processes (scopes 0 and 1), calls and returns at random, some frames unwound. */
function ops(seed: number): Op[] {
  const rnd = prng(seed);
  const addresses = [0x9000]; // no symbol: named by the address
  for (let i = 0; i < FUNCTIONS.length; i++) addresses.push(BASE + SIZE * i, BASE + SIZE * i + 5);
  const out: Op[] = [];
  const depth = [0, 0];
  let time = 0;
  for (let k = 0; k < 400; k++) {
    const track = rnd(2);
    time += rnd(7) + 0.3;
    if (depth[track]! > 0 && rnd(2) === 0) {
      out.push(exit(track, depth[track]!, time, rnd(5) === 0 ? FrameEnd.Unwind : 0));
      depth[track]!--;
    } else {
      depth[track]!++;
      const kind = depth[track] === 1 ? FrameKind.Root : rnd(4) === 0 ? FrameKind.Interrupt : FrameKind.Call;
      const lo = addresses[rnd(addresses.length)]!;
      out.push({ enter: true, track, depth: depth[track]!, kind, lo, time, end: 0 });
    }
  }
  for (let track = 0; track < 2; track++)
    for (; depth[track]! > 0; depth[track]!--) out.push(exit(track, depth[track]!, time + 1, FrameEnd.End));
  return out;
}

/** The sink's answer for `seq`, the frame names keeping at most `maxEntries` names (undefined: the default). */
function latency(seq: Op[], maxEntries: number | undefined): LatencySummary {
  const symbols = symbolizer();
  // A scope per process: two symbolizers with the same symbols.
  const other = symbolizer();
  const tracks = [new ThreadTrack(0, 10, 10, "a", 64), new ThreadTrack(1, 20, 20, "b", 64)];
  const names = new FrameNames(symbols, (t) => (t.index === 0 ? symbols : other), undefined, maxEntries);
  const l = new CallLatency(names);
  l.begin({ unit: "ns", tscBase: "0x0", nsPerTick: 1 });
  for (const t of tracks) l.resume(t, 0, 0);
  for (const op of seq) {
    const t = tracks[op.track]!;
    if (op.enter) l.enter(t, op.depth, op.kind, 0, op.lo, op.time, 0, names.scope(t));
    else l.exit(t, op.depth, op.end, op.time, 0);
  }
  l.finish();
  return l.summary();
}

/** Per "scope name": calls, total, incomplete, and per caller name its calls and total. */
type Model = Map<
  string,
  { calls: number; total: number; incomplete: number; callers: Map<string, number[]> }
>;

function model(seq: Op[]): Model {
  const names = new FrameNames(symbolizer());
  const m: Model = new Map();
  const stacks: { key: string; name: string; start: number }[][] = [[], []];
  const fn = (key: string) => {
    let f = m.get(key);
    if (f === undefined) {
      f = { calls: 0, total: 0, incomplete: 0, callers: new Map() };
      m.set(key, f);
    }
    return f;
  };
  for (const op of seq) {
    const stack = stacks[op.track]!;
    if (op.enter) {
      const name = names.name(op.kind, 0, op.lo);
      stack[op.depth - 1] = { key: `${op.track} ${name}`, name, start: Math.round(op.time) };
      fn(`${op.track} ${name}`);
      continue;
    }
    const frame = stack[op.depth - 1]!;
    const f = fn(frame.key);
    if (op.end !== 0) {
      f.incomplete++;
      continue;
    }
    const duration = Math.round(op.time) - frame.start;
    f.calls++;
    f.total += duration;
    const caller = op.depth > 1 ? stack[op.depth - 2]!.name : "(none)";
    const c = f.callers.get(caller) ?? [0, 0];
    c[0]! += 1;
    c[1]! += duration;
    f.callers.set(caller, c);
  }
  return m;
}

/** The summary in the model's terms (pids stand for the scopes: 10 and 20). */
function asModel(s: LatencySummary): Model {
  const m: Model = new Map();
  for (const f of s.functions) {
    const key = `${f.pid === 10 ? 0 : 1} ${f.name}`;
    assert.ok(!m.has(key), `${key} listed once`);
    const callers = new Map<string, number[]>();
    for (const c of f.callers) callers.set(c.caller ?? "(none)", [c.calls, c.total]);
    m.set(key, { calls: f.calls, total: f.total, incomplete: f.incomplete, callers });
  }
  return m;
}

test("a function is a name within a scope, whether its frames' names were kept or made past the limit", () => {
  for (let seed = 1; seed <= 40; seed++) {
    const seq = ops(seed);
    const want = model(seq);
    // (Functions the model met only in frames still open at the end have calls and incomplete frames both.)
    for (const limit of [undefined, 2, 6]) {
      const got = asModel(latency(seq, limit));
      assert.deepEqual(
        new Map([...got].sort()),
        new Map([...want].filter(([, f]) => f.calls > 0 || f.incomplete > 0).sort()),
        `seed ${seed}, limit ${limit}`,
      );
    }
  }
});

/**
 * Frame names in the timeline and folded stacks: frames whose entry the trace did not
 * show keep the name of their kind (an interrupt and a system call into untraced code
 * in one trace), and with symbols per thread each process's frames are named from its
 * own symbols, at the same addresses, even when the symbols change (exec) while
 * frames are held waiting for a time.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallAnalysis,
  type FlowTracker,
  FoldedStacks,
  FrameKind,
  FrameNames,
  Symbolizer,
  SymbolTable,
  type ThreadTrack,
  TimelineWriter,
} from "../../src/analysis/index.js";
import { EventType } from "../../src/event/index.js";
import { FlowClass } from "../../src/flow/index.js";
import { tryParseElf } from "../../src/image/index.js";
import { elfWithSymbols } from "../../tools/perf/pt-file.js";
import { Chunks } from "./chunks.js";
import { event } from "./pt-events.js";
import { type TimelineFrame, timelineFrames } from "./timeline-frames.js";

/** A timeline and folded stacks over `names`, fed by `feed`: the timeline's complete events and the folded lines. */
function analyse(
  names: FrameNames,
  feed: (f: FlowTracker) => void,
): { frames: TimelineFrame[]; folded: string[] } {
  const chunks = new Chunks();
  const folded = new FoldedStacks(names);
  const analysis = new CallAnalysis({
    sinks: [new TimelineWriter(chunks.out, names), folded],
    frameScope: names.perThread ? (t) => names.scope(t) : undefined,
  });
  feed(analysis.stream("t"));
  analysis.finish();
  const doc = JSON.parse(chunks.text()) as { traceEvents: object[] };
  const lines = new Chunks();
  folded.write(lines.out, "insn");
  return {
    frames: timelineFrames(doc.traceEvents),
    folded: lines.text().trim().split("\n").sort(),
  };
}

test("an interrupt and a system call into untraced code keep their own names", () => {
  // Two threads, so the second kind comes after the first is named in either output.
  const { frames, folded } = analyse(new FrameNames(undefined), (f) => {
    f.thread(1, 1, "a");
    f.insn(0, 0x1000, 1, FlowClass.Other);
    // An interrupt: tracing stops at 0x1001 (the handler is not traced), resumes there.
    f.event(event(EventType.AsyncDisabled, 0, 0x1001));
    f.event(event(EventType.Enabled, 0x1001));
    f.insn(0, 0x1001, 2, FlowClass.FarCall);
    // A SYSCALL: tracing stops with the IP suppressed, resumes after the SYSCALL.
    f.event(event(EventType.Disabled, 0, 0, true));
    f.event(event(EventType.Enabled, 0x1003));
    f.insn(0, 0x1003, 1, FlowClass.Other);
  });
  assert.deepEqual(
    frames.map((e) => `${e.cat} ${e.name}`),
    ["interrupt [interrupt]", "far [syscall]", "root 0x1000"],
  );
  // The folded stacks name them through the same cache; nothing ran in them here.
  assert.deepEqual(folded, ["a;0x1000 3"]);
  const names = new FrameNames(undefined);
  assert.equal(names.name(FrameKind.Interrupt, 0, 0), "[interrupt]");
  assert.equal(names.name(FrameKind.Far, 0, 0), "[syscall]");
  assert.equal(names.json(FrameKind.Interrupt, 0, 0), '"[interrupt]"');
  assert.equal(names.name(FrameKind.Call, 0, 0), "[unknown]");
});

const BASE = 0x400000;
/** A symbolizer of a program at BASE with `main` there and `f` at BASE + 0x10. */
function program(main: string, f: string): Symbolizer {
  const elf = tryParseElf(
    elfWithSymbols(BigInt(BASE), new Uint8Array(0x20), [
      { name: main, value: BigInt(BASE), size: 0x10 },
      { name: f, value: BigInt(BASE + 0x10), size: 0x10 },
    ]),
  );
  assert.ok(!(elf instanceof Error));
  const s = new Symbolizer();
  s.add(new SymbolTable(elf, { name: main }));
  return s;
}

/** Thread pid/pid runs main at BASE, which calls f (BASE + 0x10) `n` times. */
function run(f: FlowTracker, pid: number, n: number): void {
  f.thread(pid, pid, `p${pid}`);
  for (let i = 0; i < n; i++) {
    f.insn(0, BASE + 5, 5, FlowClass.Call);
    f.insn(0, BASE + 0x10, 1, FlowClass.Return);
  }
  f.insn(0, BASE + 0xa, 2, FlowClass.Other);
}

/** The distinct `cat name` of process pid's frames. */
const named = (frames: TimelineFrame[], pid: number) =>
  [...new Set(frames.filter((e) => e.pid === pid).map((e) => `${e.cat} ${e.name}`))].sort();

test("each process's frames are named from its own symbols at the same addresses", () => {
  const one = program("main_one", "f_one");
  const two = program("main_two", "f_two");
  const names = new FrameNames(undefined, (t: ThreadTrack) =>
    t.pid === 1 ? one : t.pid === 2 ? two : undefined,
  );
  const { frames, folded } = analyse(names, (f) => {
    run(f, 1, 3);
    run(f, 2, 2);
    run(f, 1, 1);
    run(f, 3, 1);
  });
  assert.deepEqual(named(frames, 1), ["call f_one", "root main_one"]);
  assert.deepEqual(named(frames, 2), ["call f_two", "root main_two"]);
  // No symbols of its own: the default ones (none), hex.
  assert.deepEqual(named(frames, 3), ["call 0x400010", "root 0x400005"]);
  assert.deepEqual(folded, [
    "p1;main_one 6",
    "p1;main_one;f_one 4",
    "p2;main_two 3",
    "p2;main_two;f_two 2",
    "p3;0x400005 2",
    "p3;0x400005;0x400010 1",
  ]);
});

test("after an exec, new frames get the new image's names; older ones keep theirs", () => {
  const before = program("main_old", "f_old");
  const after = program("main_new", "f_new");
  let current = before;
  const names = new FrameNames(undefined, () => current);
  // Without times every frame is held until the end: names must come from when each was entered.
  const { frames, folded } = analyse(names, (f) => {
    run(f, 1, 2);
    current = after;
    run(f, 1, 1);
  });
  assert.deepEqual(
    frames.map((e) => `${e.cat} ${e.name}`),
    ["call f_old", "call f_old", "call f_new", "root main_old"],
  );
  // The same address in two images is two nodes of the folded tree.
  assert.deepEqual(folded, ["p1;main_old 5", "p1;main_old;f_new 1", "p1;main_old;f_old 2"]);
});

test("names reach both outputs as their bytes: UTF-8, JSON escapes, separators, and thousands of names", () => {
  // Symbol names with multi-byte UTF-8, JSON's escapes, folded's separator (which
  // folds to ':' and then reads as another function's name) and a line break; then
  // enough long names that the names' byte store grows several times.
  const special = ["π_ünïcode_🙂", 'quote"d\\back', "semi;colon", "semi:colon", "new\nline"];
  const many = Array.from({ length: 3000 }, (_, i) => `function_with_a_rather_long_name_${i}`);
  const all = [...special, ...many];
  const elf = tryParseElf(
    elfWithSymbols(BigInt(BASE), new Uint8Array(0x10 * (all.length + 1)), [
      { name: "main", value: BigInt(BASE), size: 0x10 },
      ...all.map((name, i) => ({ name, value: BigInt(BASE + 0x10 * (i + 1)), size: 0x10 })),
    ]),
  );
  assert.ok(!(elf instanceof Error));
  const s = new Symbolizer();
  s.add(new SymbolTable(elf, { name: "main" }));
  const { frames, folded } = analyse(new FrameNames(s), (f) => {
    f.thread(1, 1, "p");
    for (let i = 0; i < all.length; i++) {
      f.insn(0, BASE + 5, 5, FlowClass.Call);
      f.insn(0, BASE + 0x10 * (i + 1), 1, FlowClass.Return);
    }
    f.insn(0, BASE + 0xa, 2, FlowClass.Other);
  });
  const calls = frames.filter((e) => e.cat === "call").map((e) => e.name);
  assert.deepEqual(calls, all);
  const expected = new Map<string, number>();
  for (const name of all) {
    const line = `p;main;${name.replace(/[;\r\n]/g, ":")}`;
    expected.set(line, (expected.get(line) ?? 0) + 1);
  }
  expected.set("p;main", all.length + 1);
  assert.deepEqual(folded, [...expected].map(([path, n]) => `${path} ${n}`).sort());
  assert.ok(folded.includes("p;main;semi:colon 2"));
});

test("calls into a function's middle are named name+0xoffset in both outputs, special names too", () => {
  // Names made from the function name's bytes and the offset's must read as the
  // string would: JSON escapes and UTF-8 kept, and a root frame named by its function.
  const special = ['quote"d\\back', "π_ünïcode_🙂", "semi;colon", "plain"];
  const size = 0x1000;
  const elf = tryParseElf(
    elfWithSymbols(BigInt(BASE), new Uint8Array(size * (special.length + 1)), [
      { name: "main", value: BigInt(BASE), size },
      ...special.map((name, i) => ({ name, value: BigInt(BASE + size * (i + 1)), size })),
    ]),
  );
  assert.ok(!(elf instanceof Error));
  const s = new Symbolizer();
  s.add(new SymbolTable(elf, { name: "main" }));
  const offsets = [0, 0x3, 0xa0, 0xfff];
  const expected: string[] = [];
  const names = new FrameNames(s);
  const { frames, folded } = analyse(names, (f) => {
    f.thread(1, 1, "p");
    // The root frame starts in main's middle.
    f.insn(0, BASE + 0x20, 1, FlowClass.Other);
    for (let i = 0; i < special.length; i++)
      for (const off of offsets) {
        f.insn(0, BASE + 0x25, 5, FlowClass.Call);
        f.insn(0, BASE + size * (i + 1) + off, 1, FlowClass.Return);
        expected.push(off === 0 ? special[i]! : `${special[i]!}+0x${off.toString(16)}`);
      }
    f.insn(0, BASE + 0x2a, 2, FlowClass.Other);
  });
  assert.deepEqual(
    frames.filter((e) => e.cat === "call").map((e) => e.name),
    expected,
  );
  assert.deepEqual(
    frames.filter((e) => e.cat === "root").map((e) => e.name),
    ["main"],
  );
  const lines = new Map<string, number>();
  for (const name of expected) lines.set(`p;main;${name.replace(/[;\r\n]/g, ":")}`, 1);
  lines.set("p;main", expected.length + 2);
  assert.deepEqual(folded, [...lines].map(([path, n]) => `${path} ${n}`).sort());
  // The strings asked for afterwards read as the bytes did.
  assert.equal(names.name(FrameKind.Call, 0, BASE + size + 0xa0), `${special[0]}+0xa0`);
  assert.equal(names.json(FrameKind.Call, 0, BASE + 2 * size + 3), JSON.stringify(`${special[1]}+0x3`));
});

test("folded lines that share the start of the line before and then go deeper or come back up", () => {
  // main calls f, f calls g, g calls h; then main calls g, which calls h, and then h:
  // each line starts as the one before for a part and differs below it.
  const elf = tryParseElf(
    elfWithSymbols(BigInt(BASE), new Uint8Array(0x40), [
      { name: "main", value: BigInt(BASE), size: 0x10 },
      { name: "f", value: BigInt(BASE + 0x10), size: 0x10 },
      { name: "g", value: BigInt(BASE + 0x20), size: 0x10 },
      { name: "h", value: BigInt(BASE + 0x30), size: 0x10 },
    ]),
  );
  assert.ok(!(elf instanceof Error));
  const s = new Symbolizer();
  s.add(new SymbolTable(elf, { name: "main" }));
  const { folded } = analyse(new FrameNames(s), (f) => {
    f.thread(1, 1, "p");
    f.insn(0, BASE + 1, 5, FlowClass.Call); // main -> f
    f.insn(0, BASE + 0x10, 5, FlowClass.Call); // f -> g
    f.insn(0, BASE + 0x20, 5, FlowClass.Call); // g -> h
    f.insn(0, BASE + 0x30, 1, FlowClass.Return); // h returns
    f.insn(0, BASE + 0x25, 1, FlowClass.Return); // g returns
    f.insn(0, BASE + 0x15, 1, FlowClass.Return); // f returns
    f.insn(0, BASE + 6, 5, FlowClass.Call); // main -> g
    f.insn(0, BASE + 0x20, 5, FlowClass.Call); // g -> h
    f.insn(0, BASE + 0x30, 1, FlowClass.Return);
    f.insn(0, BASE + 0x25, 1, FlowClass.Return);
    f.insn(0, BASE + 0xb, 5, FlowClass.Call); // main -> h
    f.insn(0, BASE + 0x30, 1, FlowClass.Return);
    f.insn(0, BASE + 0x10 - 1, 1, FlowClass.Other);
  });
  assert.deepEqual(folded, [
    "p;main 4",
    "p;main;f 2",
    "p;main;f;g 2",
    "p;main;f;g;h 1",
    "p;main;g 2",
    "p;main;g;h 1",
    "p;main;h 1",
  ]);
});

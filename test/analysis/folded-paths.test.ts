/**
 * Folded stacks' lines against a reference that joins each stack's names with `;` and
 * adds up the weights of lines that read the same: random call trees where names
 * collide every way they can (one function entered as a call, an interrupt and a root
 * frame; two addresses in one function; names that fold `;` to `:`; threads of one
 * name, without one, or whose name reads as a thread and a frame): whatever way
 * FoldedStacks.write finds the paths that read the same, its lines are these.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ThreadTrack } from "../../src/analysis/callstack-sink.js";
import { FoldedStacks, FrameKind, FrameNames, type Symbolizer } from "../../src/analysis/index.js";
import { Chunks } from "./chunks.js";
import { functionsSymbolizer, prng } from "./made-symbols.js";

const BASE = 0x400000;
const FUNCTIONS = ["main", "f", "g", "b", "semi;colon", "semi:colon", "new\nline"];
const SIZE = 0x10;

const symbolizer = (): Symbolizer => functionsSymbolizer(FUNCTIONS, BASE, SIZE);

/** A frame's name as a folded line has it. */
function folded(names: FrameNames, kind: FrameKind, lo: number): string {
  return names.name(kind, 0, lo).replace(/[;\r\n]/g, ":");
}

test("folded lines read as their stacks' names joined, lines that read the same added up", () => {
  const s = symbolizer();
  const kinds = [FrameKind.Call, FrameKind.Root, FrameKind.Interrupt, FrameKind.Far];
  // Function starts and middles (a call's name has the offset, a root frame's not), and unknown code.
  const addresses = [0];
  for (let i = 0; i < FUNCTIONS.length; i++)
    addresses.push(BASE + SIZE * i, BASE + SIZE * i + 3, BASE + SIZE * i + 7);
  const threadNames = [
    ["p"],
    ["p", "q"],
    ["p", "p"],
    ["q;b", "q"],
    ["", "p"],
    ["a\nb", "a:b"],
    ["x", "y", "z"],
  ];
  for (let seed = 1; seed <= 300; seed++) {
    const r = prng(seed);
    const threadSet = threadNames[seed % threadNames.length]!;
    const names = new FrameNames(s);
    const reference = new FrameNames(s);
    const stacks = new FoldedStacks(names);
    const tracks: ThreadTrack[] = threadSet.map(
      (name, index) => ({ index, pid: 1, tid: 10 + index, name }) as ThreadTrack,
    );
    const frames: string[][] = tracks.map(() => []);
    const want = new Map<string, number>();
    let icount = 0;
    let last = 0;
    let running = -1;
    // Few addresses on some seeds: many frames of one name under one parent.
    const pool = 2 + r(addresses.length - 1);
    const credit = (): void => {
      if (running >= 0 && frames[running]!.length > 0) {
        // A thread's name as its parts (between `;`s), line breaks folded as in names.
        const head = threadSet[running]!.replace(/[\r\n]/g, ":");
        const line = [...(head === "" ? [] : [head]), ...frames[running]!].join(";");
        want.set(line, (want.get(line) ?? 0) + icount - last);
      }
      last = icount;
    };
    for (let step = 0; step < 400; step++) {
      icount += r(7);
      const op = r(10);
      if (running < 0 || op === 0) {
        if (running >= 0) {
          credit();
          stacks.suspend(tracks[running]!, 0, icount);
        }
        running = r(tracks.length);
        stacks.resume(tracks[running]!, 0, icount);
        last = icount;
        continue;
      }
      const stack = frames[running]!;
      const track = tracks[running]!;
      if (op < 5 || stack.length === 0) {
        const kind = kinds[r(kinds.length)]!;
        const lo = addresses[r(pool)]!;
        credit();
        stack.push(folded(reference, kind, lo));
        stacks.enter(track, stack.length, kind, 0, lo, 0, icount, 0);
      } else {
        credit();
        stacks.exit(track, stack.length, 0, 0, icount);
        stack.pop();
      }
    }
    credit();
    stacks.suspend(tracks[running]!, 0, icount);
    const out = new Chunks();
    stacks.write(out.out, "insn");
    const got = out.text() === "" ? [] : out.text().trimEnd().split("\n").sort();
    const expected = [...want]
      .filter(([, n]) => n > 0)
      .map(([line, n]) => `${line} ${n}`)
      .sort();
    assert.deepEqual(got, expected, `seed ${seed}, threads ${JSON.stringify(threadSet)}`);
  }
});

/**
 * Resynchronising after errors (ptxed --resync-on-error) always makes progress: a
 * resync that would leave the decoder at or before where the resync before it started
 * (back to a PSB whose PSB+ fails again) goes on at the next PSB past that point
 * instead. libipt (8978561f) repeats the same error without end on such traces; both
 * ptkit decoders match its output up to where it starts repeating.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import fc from "fast-check";
import { Image } from "../../src/image/index.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { Trace } from "../event/helpers.js";
import { addCode } from "./asm.js";
import { makeProgram } from "./program.js";
import { runBlocks, runInsns, type Transcript } from "./run.js";

const FLOW_1 = ["regressions", "flow-1.bin"];
const BLOCK_STAT = ["ptt", "ptxed-block-stat", "ptxed-block-stat.bin"];

/** Far more lines than any of these traces makes when resync makes progress. */
const LIMIT = 100_000;
/** The loop guard's bound in the properties: code that loops without trace ends soon. */
const LOOP_WATCH = 1000;

/**
 * Each resync starts past where the one before the last started, so there are at most
 * two per trace byte (and the first two): errors (one per resync) beyond that are a loop.
 */
function assertBounded(t: Transcript, trace: Uint8Array, what: string): void {
  const errors = t.lines.filter((l) => l.startsWith("[error:")).length;
  assert.ok(errors <= 2 * trace.length + 2, `${what}: ${errors} errors from ${trace.length} bytes`);
  assert.ok(t.lines.length < LIMIT, `${what}: ${t.lines.length} lines, the last ${t.lines.at(-1)}`);
}

test("regressions/flow-1.bin: resync goes on past the PSB+ that fails again, then the trace ends", {
  skip: skipUnlessCorpus(...FLOW_1) || skipUnlessCorpus(...BLOCK_STAT),
}, () => {
  const image = new Image("block-stat");
  addCode(image, new Uint8Array(readFileSync(corpusPath(...BLOCK_STAT)!)), 0x1000n);
  const trace = new Uint8Array(readFileSync(corpusPath(...FLOW_1)!));
  // The first five lines and the first error are ptxed's without resync; libipt's resync
  // then reports the disable and the same error again, and from there on goes back to
  // the PSB at 0 and reports "unexpected packet context" at 0x24 without end.
  const want = [
    "0x1000",
    "0x1001",
    "0x1002",
    "0x1003",
    "0x1004",
    "[error: no memory mapped at this address]",
    "[async-disabled 0x0->-]",
    "[error: no memory mapped at this address]",
    "[resync error: reached end of trace stream]",
  ];
  for (const run of [runInsns, runBlocks]) {
    const t = run(trace, { image, resync: true, limit: LIMIT });
    assert.deepEqual(t.lines, want, run.name);
  }
});

/** A trace with a random change: bytes overwritten, a chunk repeated, removed, or a PSBEND put in. */
const mutation = fc.tuple(
  fc.constantFrom("flip", "repeat", "cut", "psbend"),
  fc.nat(),
  fc.integer({ min: 1, max: 40 }),
  fc.integer({ min: 0, max: 255 }),
);

function mutate(trace: Uint8Array, [kind, at, len, value]: [string, number, number, number]): Uint8Array {
  const p = at % (trace.length + 1);
  const b = Buffer.from(trace);
  switch (kind) {
    case "flip":
      if (p < b.length) b[p] = value;
      return new Uint8Array(b);
    case "repeat":
      return new Uint8Array(Buffer.concat([b.subarray(0, p + len), b.subarray(p)]));
    case "cut":
      return new Uint8Array(Buffer.concat([b.subarray(0, p), b.subarray(p + len)]));
    default:
      return new Uint8Array(Buffer.concat([b.subarray(0, p), Buffer.from([0x02, 0x23]), b.subarray(p)]));
  }
}

test("resync on mutated program traces always ends: at most two errors per trace byte", {
  timeout: 300_000,
}, () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 0x7fffffff }),
      fc.array(mutation, { minLength: 1, maxLength: 4 }),
      (seed, changes) => {
        const prog = makeProgram({ seed, steps: 200, events: 0.03 });
        const trace = changes.reduce(mutate, prog.trace);
        for (const run of [runInsns, runBlocks]) {
          assertBounded(run(trace, { image: prog.image, resync: true, limit: LIMIT }), trace, run.name);
        }
      },
    ),
    { numRuns: 150 },
  );
});

test("resync on random bytes behind PSB+ always ends: at most two errors per trace byte", {
  timeout: 300_000,
}, () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ minLength: 0, maxLength: 60 }), { minLength: 1, maxLength: 4 }),
      fc.uint8Array({ minLength: 1, maxLength: 64 }),
      (tails, code) => {
        const image = new Image("random");
        addCode(image, code, 0x1000n);
        // Segments of PSB+ and random bytes: resync has PSBs to go back to.
        const parts = tails.flatMap((tail) => [
          new Trace().psb().mode(64).fup(0x1000n).psbend().bytes(),
          tail,
        ]);
        const trace = new Uint8Array(Buffer.concat(parts));
        for (const run of [runInsns, runBlocks]) {
          // Random code can loop without trace (36 EB FD: jmp $): the loop guard ends such
          // a walk (after LOOP_WATCH instructions here, to keep the transcripts short).
          const t = run(trace, { image, resync: true, limit: LIMIT, loopCheckAfter: LOOP_WATCH });
          assertBounded(t, trace, run.name);
        }
      },
    ),
    { numRuns: 300 },
  );
});

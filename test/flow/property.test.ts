/**
 * Property tests over random programs: both decoders reconstruct exactly the
 * instructions that ran, and report the same instructions and events in the same
 * order.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { makeProgram } from "./program.js";
import { runBlocks, runInsns } from "./run.js";

/** Transcript lines that are instructions or event names (details dropped), for the truth. */
function shape(lines: string[]): string[] {
  return lines.map((l) => (l.startsWith("[") ? `[${l.slice(1).split(/[ \]]/)[0]}]` : l));
}

test("random programs: the decoders reconstruct what ran", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.integer({ min: 1, max: 400 }), (seed, steps) => {
      const prog = makeProgram({ seed, steps });
      const insns = runInsns(prog.trace, { image: prog.image });
      const blocks = runBlocks(prog.trace, { image: prog.image });
      assert.deepEqual(shape(insns.lines), prog.truth);
      assert.deepEqual(blocks.lines, insns.lines);
    }),
    { numRuns: 300 },
  );
});

test("random programs with interrupts, PSB+, overflows, disables and TSX", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.integer({ min: 1, max: 400 }), (seed, steps) => {
      const prog = makeProgram({ seed, steps, events: 0.02 });
      const insns = runInsns(prog.trace, { image: prog.image });
      const blocks = runBlocks(prog.trace, { image: prog.image });
      assert.deepEqual(shape(insns.lines), prog.truth);
      assert.deepEqual(blocks.lines, insns.lines);
    }),
    { numRuns: 300 },
  );
});

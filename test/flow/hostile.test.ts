/**
 * Bad input is normal input: random bytes as trace or as code, corrupted and cut-off
 * traces. The decoders must never throw or hang, and must report errors and resume.
 *
 * The two decoders need not tell the same story on every corrupted trace: as in
 * libipt, a block-cache entry made while decoding in one mode also serves the block
 * decoder after a (corrupted) switch to another mode, while the instruction decoder,
 * whose block decoder works without the cache, decodes in the new mode. Where the mode
 * cannot change, they must agree.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { Image } from "../../src/image/index.js";
import { Trace } from "../event/helpers.js";
import { addCode } from "./asm.js";
import { makeProgram } from "./program.js";
import { runBlocks, runInsns } from "./run.js";

const LIMIT = 20_000;

/** Both decoders with resync, to the end (or the line limit): the transcripts. */
function survive(trace: Uint8Array, image: Image): [string[], string[]] {
  const insns = runInsns(trace, { image, resync: true, limit: LIMIT });
  const blocks = runBlocks(trace, { image, resync: true, limit: LIMIT });
  return [insns.lines, blocks.lines];
}

/** Both decoders with resync, which must agree: the transcript. */
function agree(trace: Uint8Array, image: Image): string[] {
  const [insns, blocks] = survive(trace, image);
  assert.deepEqual(blocks, insns);
  return insns;
}

test("random bytes as trace and as code", { timeout: 120_000 }, () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 0, maxLength: 600 }),
      fc.uint8Array({ minLength: 1, maxLength: 300 }),
      (trace, code) => {
        const image = new Image("random");
        addCode(image, code, 0x1000n);
        survive(trace, image);
      },
    ),
    { numRuns: 400 },
  );
});

test("random bytes behind a valid PSB+, decoding random code", { timeout: 120_000 }, () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 0, maxLength: 400 }),
      fc.uint8Array({ minLength: 1, maxLength: 200 }),
      fc.constantFrom(16, 32, 64),
      (tail, code, bits) => {
        const image = new Image("random");
        addCode(image, code, 0x1000n);
        const head = new Trace()
          .psb()
          .mode(bits as 16 | 32 | 64)
          .fup(0x1000n)
          .psbend()
          .bytes();
        const trace = new Uint8Array(head.length + tail.length);
        trace.set(head);
        trace.set(tail, head.length);
        const [insns, blocks] = survive(trace, image);
        // Errors are reported (with their message), never thrown.
        for (const line of [...insns, ...blocks]) assert.match(line, /^(\?? ?0x[0-9a-f]+|\[.*\])$/);
      },
    ),
    { numRuns: 400 },
  );
});

test("corrupted program traces: errors and resync", { timeout: 120_000 }, () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 0x7fffffff }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
      (seed, flips) => {
        const prog = makeProgram({ seed, steps: 300, events: 0.02 });
        const trace = prog.trace.slice();
        for (const [at, value] of flips) trace[at % trace.length] = value;
        const [insns, blocks] = survive(trace, prog.image);
        for (const line of [...insns, ...blocks]) assert.match(line, /^(\?? ?0x[0-9a-f]+|\[.*\])$/);
      },
    ),
    { numRuns: 200 },
  );
});

test("after an error, decoding goes on at the next PSB", () => {
  const image = new Image("code");
  // 0x1000: jmp rax; 0x1002: nop; 0x1003: hlt
  addCode(image, Uint8Array.of(0xff, 0xe0, 0x90, 0xf4), 0x1000n);
  const trace = new Trace()
    .psb()
    .mode(64)
    .fup(0x1000n)
    .psbend()
    .tnt("!")
    .psb()
    .mode(64)
    .fup(0x1002n)
    .psbend()
    .fup(0x1003n)
    .pgd()
    .bytes();
  assert.deepEqual(agree(trace, image), [
    "0x1000",
    "[error: trace stream does not match query]",
    "0x1002",
    "[async-disabled 0x1003->-]",
  ]);
});

test("every cut-off of a program trace", { timeout: 120_000 }, () => {
  const prog = makeProgram({ seed: 42, steps: 120, events: 0.03 });
  const full = agree(prog.trace, prog.image);
  for (let end = 0; end < prog.trace.length; end++) {
    const lines = agree(prog.trace.subarray(0, end), prog.image);
    // What a cut-off trace shows is never more than the whole trace shows, up to
    // where it ends (its last line may be the end or an error instead).
    for (let i = 0; i < lines.length - 1; i++) {
      if (lines[i]!.startsWith("[")) continue;
      assert.equal(lines[i], full[i], `cut at ${end}, line ${i}`);
    }
  }
});

test("no image at all: missing memory, then resync at the TIP, then the trace ends", () => {
  const trace = new Trace().psb().mode(64).fup(0x1000n).psbend().tnt("!.").tip(0x2000n).bytes();
  assert.deepEqual(agree(trace, new Image("empty")), [
    "[error: no memory mapped at this address]",
    "[end of trace]",
  ]);
});

/** Cutting a trace into pieces at PSBs, and statistics merged from the pieces. */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { generateTrace } from "../../bench/synthetic-trace.js";
import { planChunks } from "../../src/packet/chunks.js";
import { collectStats, type TraceStats } from "../../src/packet/stats.js";
import { StatsMerge } from "../../src/packet/stats-merge.js";
import { TraceBytes } from "../../src/packet/trace-bytes.js";
import { hostileBytes, isRunPsb, PSB_BYTES } from "./hostile.js";

const memory = (bytes: Uint8Array) => ({
  size: bytes.length,
  read: (o: number, n: number) => bytes.slice(o, o + n),
});

/** Statistics merged from pieces decoded apart (as the worker threads do), and how many were redone. */
function piecewise(bytes: Uint8Array, starts: number[]): { stats: TraceStats; reruns: number } {
  const merge = new StatsMerge(memory(bytes), 5);
  starts.forEach((start, i) => {
    const stop = starts[i + 1] ?? bytes.length;
    const piece = collectStats(TraceBytes.read(memory(bytes.subarray(start)), 64), {
      stop: stop - start,
      maxErrors: 5,
    });
    merge.add(piece, start, stop);
  });
  return { stats: merge.result(), reruns: merge.reruns };
}

function whole(bytes: Uint8Array): TraceStats {
  const { stopAt: _a, block: _b, ...stats } = collectStats(bytes, { maxErrors: 5 });
  return stats;
}

test("pieces start at 0 and then at PSBs, a piece or more apart; a small trace is one piece", () => {
  const bytes = generateTrace({ seed: 3, size: 1 << 20 });
  const starts = planChunks(memory(bytes), 4, 10000);
  assert.equal(starts[0], 0);
  // Four pieces a thread (the minimum is smaller here).
  assert.ok(starts.length >= 12 && starts.length <= 16, `${starts.length} pieces`);
  for (let i = 1; i < starts.length; i++) {
    assert.ok(isRunPsb(bytes, starts[i]!, bytes.length), `piece ${i} at ${starts[i]} is not at a PSB`);
    assert.ok(starts[i]! - starts[i - 1]! >= 10000);
  }
  assert.deepEqual(planChunks(memory(bytes), 4, (1 << 19) + 1), [0]);
  assert.deepEqual(planChunks(memory(bytes), 1, 100), [0]);
});

test("tapered pieces shrink towards the end, down to a quarter of the minimum, and start at PSBs", () => {
  const bytes = generateTrace({ seed: 3, size: 1 << 20 });
  const min = 40000;
  const starts = planChunks(memory(bytes), 2, min, Number.POSITIVE_INFINITY, true);
  const sizes = starts.map((s, i) => (starts[i + 1] ?? bytes.length) - s);
  // The first is a quarter of the trace (a share of what is left, for two threads).
  assert.ok(Math.abs(sizes[0]! - bytes.length / 4) < 2000, `first piece ${sizes[0]}`);
  for (let i = 1; i < starts.length; i++) {
    assert.ok(isRunPsb(bytes, starts[i]!, bytes.length), `piece ${i} at ${starts[i]} is not at a PSB`);
    // Each a share of what was left (up to the PSB after it), or the floor.
    const left = bytes.length - starts[i]!;
    if (i < starts.length - 1)
      assert.ok(sizes[i]! >= Math.max(min / 4, left / 4), `piece ${i}: ${sizes[i]} of ${left}`);
    assert.ok(sizes[i]! < sizes[0]! / 2 || i < 3, `piece ${i} (${sizes[i]}) did not shrink`);
  }
  assert.ok(sizes.at(-2)! < min / 2, `the pieces near the end (${sizes.at(-2)}) stayed large`);
  // A bound on pieces holds as before.
  const bounded = planChunks(memory(bytes), 2, min, 50000, true);
  for (let i = 0; i < bounded.length; i++)
    assert.ok((bounded[i + 1] ?? bytes.length) - bounded[i]! < 50000 + 4096);
});

test("statistics from pieces are those of the whole trace, whatever the bytes", () => {
  let reruns = 0;
  let cut = 0;
  fc.assert(
    fc.property(hostileBytes(80), fc.integer({ min: 32, max: 200 }), (bytes, min) => {
      const starts = planChunks(memory(bytes), 3, min);
      if (starts.length > 1) cut++;
      const merged = piecewise(bytes, starts);
      reruns += merged.reruns;
      assert.deepEqual(merged.stats, whole(bytes));
    }),
    { numRuns: 3000 },
  );
  // The property covered cut traces, and seams where a piece had to be decoded again.
  assert.ok(cut > 100, `${cut} traces were cut`);
  assert.ok(reruns > 0, "no piece was decoded again");
});

test("a piece whose PSB lies inside a packet is decoded again from where the one before stopped", () => {
  // A TSC (0x19 + 7 bytes) whose payload begins a PSB: cut at the pattern, the decode of the whole
  // trace never sees that PSB, the piece that starts there is wrong, and the merge must notice.
  const tsc = [0x19, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02];
  const rest = Array.from(PSB_BYTES.subarray(7));
  const bytes = Uint8Array.from([...PSB_BYTES, 0x02, 0x23, ...tsc, ...rest, 0x00, 0x00, ...PSB_BYTES, 0x00]);
  const psbInside = 16 + 2 + 1;
  assert.ok(isRunPsb(bytes, psbInside, bytes.length));
  const merged = piecewise(bytes, [0, psbInside]);
  assert.equal(merged.reruns, 1);
  assert.deepEqual(merged.stats, whole(bytes));
});

/**
 * planPieces: when a trace is split for --jobs, by the command's sizes (a forced
 * piece size, as tests and PTKIT_CHUNK_SIZE give, still splits small traces).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { planPieces } from "../../src/cli/jobs.js";
import type { ChunkRunner, SessionIo } from "../../src/session/io.js";

/** `mib` MiB of PADs with a PSB every 64 KiB. */
function psbEvery64k(mib: number) {
  const bytes = new Uint8Array(mib << 20);
  for (let at = 0; at + 16 <= bytes.length; at += 64 << 10)
    for (let i = 0; i < 16; i += 2) bytes.set([0x02, 0x82], at + i);
  return {
    size: bytes.length,
    read: (offset: number, length: number) => bytes.subarray(offset, offset + length),
  };
}

function ioWith(minChunk?: number): SessionIo {
  const chunks: ChunkRunner = { threads: 2, minChunk, run: async () => {} };
  return { chunks } as unknown as SessionIo;
}

test("a trace under the command's least size for pieces is one piece, unless a piece size is forced", () => {
  const saved = process.env.PTKIT_CHUNK_SIZE;
  delete process.env.PTKIT_CHUNK_SIZE;
  try {
    const trace = psbEvery64k(12);
    const split = planPieces(ioWith(), trace, 2);
    assert.ok(split.length > 1, `12 MiB in 4 MiB pieces: ${split}`);
    assert.ok(split.every((s) => s % (64 << 10) === 0));
    assert.deepEqual(planPieces(ioWith(), trace, 2, { minTrace: 16 << 20 }), [0]);
    assert.deepEqual(planPieces(ioWith(), trace, 2, { minTrace: 12 << 20 }), split);
    // Forced: pieces of 1 MiB however small the trace.
    assert.ok(planPieces(ioWith(1 << 20), trace, 2, { minTrace: 16 << 20 }).length > 1);
    assert.deepEqual(planPieces(ioWith(), trace, 1), [0]);
  } finally {
    if (saved !== undefined) process.env.PTKIT_CHUNK_SIZE = saved;
  }
});

/**
 * The process's file reads (src/node/io.ts): readRangeInto puts a file's bytes where it
 * is told in the caller's buffer and says how many, fewer only at the end of the
 * file; readRange gives the same bytes in a buffer of their own.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { nodeIo } from "../../src/node/io.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-node-io-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const bytes = Uint8Array.from({ length: 70000 }, (_, i) => (i * 131 + (i >> 8)) & 0xff);
writeFileSync(join(dir, "f.bin"), bytes);

test("readRangeInto reads into the caller's buffer at its index, short only at the end of the file", () => {
  const io = nodeIo(dir);
  const readInto = io.readRangeInto;
  assert.ok(readInto);
  const into = new Uint8Array(80000).fill(0xee);
  for (const [offset, at, length] of [
    [0, 0, 100],
    [12345, 7, 50000],
    [69990, 3, 10],
    [1, 79999, 1],
  ] as const) {
    into.fill(0xee);
    assert.equal(readInto(join(dir, "f.bin"), offset, into, at, length), length);
    assert.deepEqual(into.subarray(at, at + length), bytes.subarray(offset, offset + length));
    assert.ok(
      into.subarray(0, at).every((b) => b === 0xee) && into.subarray(at + length).every((b) => b === 0xee),
    );
    assert.deepEqual(io.readRange("f.bin", offset, length), bytes.subarray(offset, offset + length));
  }
  // Past the end: what there is (relative paths from the io's directory).
  into.fill(0xee);
  assert.equal(readInto("f.bin", 69000, into, 10, 5000), 1000);
  assert.deepEqual(into.subarray(10, 1010), bytes.subarray(69000));
  assert.equal(into[1010], 0xee);
  assert.deepEqual(io.readRange("f.bin", 69000, 5000), bytes.subarray(69000));
  assert.throws(() => readInto("missing.bin", 0, into, 0, 10), { code: "ENOENT" });
});

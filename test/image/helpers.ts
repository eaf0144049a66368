/** Shared checks for the image tests. */
import assert from "node:assert/strict";
import { PtError } from "../../src/base/errors.js";
import { ElfError, type ElfFile, parseElf } from "../../src/image/elf.js";

export const big = (hi: number, lo: number): bigint => (BigInt(hi) << 32n) | BigInt(lo);
export const halves = (v: bigint): [number, number] => [
  Number((BigInt.asUintN(64, v) >> 32n) & 0xffffffffn),
  Number(v & 0xffffffffn),
];

/** Parse, expecting an ElfError on `field` at `offset` whose message matches `message`. */
export function expectElfError(
  bytes: Uint8Array,
  field: string,
  offset: number,
  message?: RegExp | string,
  options?: { strict?: boolean },
): ElfError {
  let err: unknown;
  try {
    parseElf(bytes, options);
  } catch (e) {
    err = e;
  }
  assert.ok(
    err instanceof ElfError,
    `expected an ElfError on ${field}, got ${err === undefined ? "success" : err}`,
  );
  assert.ok(err instanceof PtError);
  assert.equal(err.field, field, err.message);
  assert.equal(err.offset, offset, `${err.message}: offset 0x${err.offset.toString(16)}`);
  if (typeof message === "string") assert.equal(err.detail, message);
  else if (message) assert.match(err.detail, message);
  return err;
}

/**
 * Whatever parseElf did with `bytes` was legitimate: a well-formed ElfFile whose every
 * promise holds, or an ElfError that names a field mentioned in its message at an offset
 * inside the file. Anything else fails the test.
 */
export function checkOutcome(bytes: Uint8Array, strict = true): ElfFile | ElfError {
  let out: ElfFile | ElfError;
  try {
    out = parseElf(bytes, { strict });
  } catch (e) {
    if (!(e instanceof ElfError)) throw e;
    out = e;
  }
  if (out instanceof ElfError) {
    checkError(out, bytes.length);
    return out;
  }
  for (const w of out.warnings) checkError(w, bytes.length);
  for (const s of out.segments) {
    if (s.type !== 0) assert.ok(s.offset + s.filesz <= bytes.length);
  }
  for (const s of out.loads) {
    assert.ok(s.memsz >= s.filesz && Number.isSafeInteger(s.memsz));
    assert.ok(s.memsz === 0 || big(s.vaddrHi, s.vaddrLo) + BigInt(s.memsz) <= 1n << 64n);
  }
  for (const s of out.sections) {
    assert.equal(typeof s.name, "string");
    if (s.type !== 0 && s.type !== 8) assert.ok(s.offset + s.size <= bytes.length);
  }
  return out;
}

function checkError(e: ElfError, size: number): void {
  assert.ok(e.field.length > 0);
  assert.ok(e.detail.includes(e.field), `"${e.detail}" does not name ${e.field}`);
  assert.ok(
    Number.isInteger(e.offset) && e.offset >= 0 && e.offset <= size,
    `${e.message} (size 0x${size.toString(16)})`,
  );
  assert.ok(e.message.includes(`offset 0x${e.offset.toString(16)}`));
}

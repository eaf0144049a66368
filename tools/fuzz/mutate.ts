/**
 * Byte-level mutations of seed files: bit flips, byte and word sets to interesting
 * values, chunk duplicate/delete/insert, truncation and splicing with another seed.
 * Positions favour the first KiB (headers: perf.data's TIME_CONV sits at ~600 bytes)
 * and the last bytes (trailers, lengths that run off the end).
 */
import type { Rng } from "./prng.js";

/** Bytes worth writing: zero, all ones, sign boundaries, small lengths. */
export const INTERESTING_8 = [0x00, 0xff, 0x7f, 0x80, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0xfe];
/** 32-bit values (written little-endian): extremes and lengths near powers of two. */
export const INTERESTING_32 = [
  0, 0xffffffff, 0x7fffffff, 0x80000000, 1, 0x10, 0x100, 0x1000, 0xffff, 0x10000, 0x7ffffff9, 0x1ffffff9,
];

/** The largest input a mutation may produce (memory stays bounded). */
export const MAX_MUTANT = 1 << 20;

export type MutationKind =
  | "flip"
  | "set8"
  | "set32"
  | "random8"
  | "dup"
  | "delete"
  | "insert"
  | "truncate"
  | "splice";

export const MUTATIONS: readonly MutationKind[] = [
  "flip",
  "set8",
  "set32",
  "random8",
  "dup",
  "delete",
  "insert",
  "truncate",
  "splice",
];

/** A position in [0, n): a third uniform, a third in the first KiB, a third in the last 64 bytes. */
export function position(rng: Rng, n: number): number {
  switch (rng.below(3)) {
    case 0:
      return rng.below(n);
    case 1:
      return rng.below(Math.min(n, 1024));
    default:
      return n - 1 - rng.below(Math.min(n, 64));
  }
}

/** A chunk length: mostly small, sometimes up to a quarter of the input. */
function chunkLength(rng: Rng, n: number): number {
  return rng.chance(0.8) ? rng.range(1, 16) : rng.range(1, Math.max(1, n >> 2));
}

/**
 * Apply one mutation; returns the new bytes (a fresh array; `input` is not changed)
 * and a short description for the case log. `other` is a second seed for splicing.
 */
export function mutateOnce(
  rng: Rng,
  input: Uint8Array,
  kind: MutationKind,
  other?: Uint8Array,
): { bytes: Uint8Array; what: string } {
  const n = input.length;
  if (n === 0) {
    const bytes = new Uint8Array(rng.range(1, 16));
    for (let i = 0; i < bytes.length; i++) bytes[i] = rng.u32() & 0xff;
    return { bytes, what: `fill ${bytes.length}` };
  }
  switch (kind) {
    case "flip": {
      const bytes = input.slice();
      const at = position(rng, n);
      const bit = rng.below(8);
      bytes[at]! ^= 1 << bit;
      return { bytes, what: `flip @${at}.${bit}` };
    }
    case "set8":
    case "random8": {
      const bytes = input.slice();
      const at = position(rng, n);
      const v = kind === "set8" ? rng.pick(INTERESTING_8) : rng.u32() & 0xff;
      bytes[at] = v;
      return { bytes, what: `${kind} @${at}=0x${v.toString(16)}` };
    }
    case "set32": {
      const bytes = input.slice();
      const at = Math.max(0, position(rng, n) - 3);
      const v = rng.pick(INTERESTING_32);
      for (let i = 0; i < 4 && at + i < n; i++) bytes[at + i] = (v >>> (8 * i)) & 0xff;
      return { bytes, what: `set32 @${at}=0x${v.toString(16)}` };
    }
    case "dup": {
      const at = position(rng, n);
      const len = Math.min(chunkLength(rng, n), n - at, MAX_MUTANT - n);
      const to = rng.below(n + 1);
      return {
        bytes: splice3(input.subarray(0, to), input.subarray(at, at + len), input.subarray(to)),
        what: `dup ${at}+${len}->${to}`,
      };
    }
    case "delete": {
      const at = position(rng, n);
      const len = Math.min(chunkLength(rng, n), n - at);
      return {
        bytes: splice3(input.subarray(0, at), new Uint8Array(0), input.subarray(at + len)),
        what: `delete ${at}+${len}`,
      };
    }
    case "insert": {
      const at = position(rng, n);
      const len = Math.min(chunkLength(rng, n), MAX_MUTANT - n);
      const chunk = new Uint8Array(len);
      const fill = rng.chance(0.5) ? rng.pick(INTERESTING_8) : -1;
      for (let i = 0; i < len; i++) chunk[i] = fill >= 0 ? fill : rng.u32() & 0xff;
      return {
        bytes: splice3(input.subarray(0, at), chunk, input.subarray(at)),
        what: `insert ${at}+${len}`,
      };
    }
    case "truncate": {
      const at = position(rng, n);
      return { bytes: input.slice(0, at), what: `truncate ${at}` };
    }
    case "splice": {
      if (!other || other.length === 0) return mutateOnce(rng, input, "flip");
      const at = position(rng, n);
      const from = rng.below(other.length);
      const tail = other.subarray(from, from + Math.min(other.length - from, MAX_MUTANT - at));
      return {
        bytes: splice3(input.subarray(0, at), tail, new Uint8Array(0)),
        what: `splice ${at}<-other@${from}`,
      };
    }
  }
}

/** One to four stacked mutations; returns the mutant and what was done. */
export function mutate(
  rng: Rng,
  input: Uint8Array,
  other?: Uint8Array,
): { bytes: Uint8Array; what: string[] } {
  let bytes = input;
  const what: string[] = [];
  const count = rng.chance(0.5) ? 1 : rng.range(2, 4);
  for (let i = 0; i < count; i++) {
    const m = mutateOnce(rng, bytes, rng.pick(MUTATIONS), other);
    bytes = m.bytes;
    what.push(m.what);
  }
  return { bytes, what };
}

function splice3(a: Uint8Array, b: Uint8Array, c: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length + c.length);
  out.set(a, 0);
  out.set(b, a.length);
  out.set(c, a.length + b.length);
  return out;
}

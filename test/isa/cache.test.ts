/**
 * InsnCache: hits and misses, keys, eviction, invalidation, statistics, and the same
 * answers as decoding afresh (property test, with self-modifying code).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { ANY_ASID, InsnCache } from "../../src/isa/cache.js";
import { decodeInsn } from "../../src/isa/decode.js";
import { ExecMode, InsnClass, InsnFlag, InsnInfo } from "../../src/isa/types.js";
import { hex } from "./helpers.js";

const { Bits16, Bits32, Bits64 } = ExecMode;

/** A code image at `base`: call +0 / jcc / nops / ret / garbage. */
// Ends in a CALL cut short after 3 bytes: a failed decode.
const CODE = hex("e8 00 00 00 00 0f 84 10 00 00 00 90 90 48 89 5c 24 10 c3 e8 ff ff");
const BASE = 0x401000;

function fields(out: InsnInfo): number[] {
  return [out.length, out.iclass, out.flags, out.targetHi, out.targetLo];
}

describe("lookups", () => {
  test("a miss decodes and a hit returns the same record without reading the bytes", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    assert.equal(cache.lookup(1, 0, BASE, Bits64, CODE, 0, out), 5);
    assert.equal(out.iclass, InsnClass.Call);
    assert.equal(out.flags, InsnFlag.Target | InsnFlag.ZeroLengthCall);
    const first = fields(out);
    out.clear();
    // The bytes are not looked at on a hit: pass garbage.
    assert.equal(cache.lookup(1, 0, BASE, Bits64, hex("06"), 0, out), 5);
    assert.deepEqual(fields(out), first);
    assert.deepEqual(
      { hits: cache.stats().hits, misses: cache.stats().misses, entries: cache.stats().entries },
      { hits: 1, misses: 1, entries: 1 },
    );
  });

  test("address space, IP halves and mode are all part of the key", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    const ret = hex("c3");
    const nop = hex("90");
    cache.lookup(1, 0, BASE, Bits64, ret, 0, out);
    assert.equal(cache.lookup(2, 0, BASE, Bits64, nop, 0, out), 1);
    assert.equal(out.iclass, InsnClass.Other, "another address space");
    assert.equal(cache.lookup(1, 1, BASE, Bits64, nop, 0, out), 1);
    assert.equal(out.iclass, InsnClass.Other, "another high half");
    assert.equal(cache.lookup(1, 0, BASE, Bits32, nop, 0, out), 1);
    assert.equal(out.iclass, InsnClass.Other, "another mode");
    assert.equal(cache.lookup(1, 0, BASE, Bits64, nop, 0, out), 1);
    assert.equal(out.iclass, InsnClass.Return, "the first entry is still there");
    assert.equal(cache.stats().misses, 4);
    assert.equal(cache.stats().hits, 1);
  });

  test("negative and unsigned forms of the same numbers are the same key", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    cache.lookup(0xffffffff, 0xffffffff, 0x80000000, Bits64, hex("c3"), 0, out);
    assert.equal(cache.probe(-1, -1, -0x80000000, Bits64, out), 1);
    assert.equal(out.iclass, InsnClass.Return);
  });

  test("failed decodes are cached; bad arguments are not", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    assert.equal(cache.lookup(1, 0, BASE, Bits64, hex("e8 00"), 0, out), -ErrorCode.BadInsn); // cut short
    assert.equal(cache.lookup(1, 0, BASE, Bits64, hex("90"), 0, out), -ErrorCode.BadInsn);
    assert.equal(out.length, 0);
    assert.equal(cache.stats().hits, 1);
    assert.equal(cache.lookup(1, 0, BASE + 1, ExecMode.Unknown, hex("90"), 0, out), -ErrorCode.Invalid);
    assert.equal(cache.lookup(1, 0, BASE + 1, Bits64, hex("90"), -1, out), -ErrorCode.Invalid);
    assert.equal(cache.stats().entries, 1);
  });

  test("probe never decodes: 0 on a miss", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    assert.equal(cache.probe(1, 0, BASE, Bits64, out), 0);
    cache.lookup(1, 0, BASE, Bits64, CODE, 0, out);
    out.clear();
    assert.equal(cache.probe(1, 0, BASE, Bits64, out), 5);
    assert.equal(out.targetLo, BASE + 5);
    assert.equal(cache.probe(1, 0, BASE, Bits16, out), 0);
  });

  test("targets of high addresses survive the round trip", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    const jcc = hex("0f 84 10 00 00 00");
    cache.lookup(3, 0xffffffff, 0xfffffff0, Bits64, jcc, 0, out);
    assert.equal(cache.probe(3, 0xffffffff, 0xfffffff0, Bits64, out), 6);
    assert.equal(out.target, 0x6n); // wraps at 2^64
    cache.lookup(3, 0xffffffff, 0x81000000, Bits64, jcc, 0, out);
    cache.probe(3, 0xffffffff, 0x81000000, Bits64, out);
    assert.equal(out.target, 0xffff_ffff_8100_0016n);
  });
});

describe("bounded memory", () => {
  test("capacity is a power of two, at least 64, 32 bytes an entry", () => {
    assert.equal(new InsnCache({ maxEntries: 1 }).capacity, 64);
    assert.equal(new InsnCache({ maxEntries: 1000 }).capacity, 1024);
    assert.equal(new InsnCache({ maxEntries: 1024 }).capacity, 1024);
    assert.equal(new InsnCache().capacity, 65536);
    assert.equal(new InsnCache({ maxEntries: 4096 }).stats().bytes, 4096 * 32);
  });

  test("a full cache evicts, and never holds more than its capacity", () => {
    const cache = new InsnCache({ maxEntries: 64 });
    const out = new InsnInfo();
    const nop = hex("90");
    for (let i = 0; i < 1000; i++) cache.lookup(1, 0, BASE + i, Bits64, nop, 0, out);
    const s = cache.stats();
    assert.equal(s.misses, 1000);
    assert.ok(s.entries <= 64);
    assert.ok(s.entries >= 60, `entries ${s.entries}: the sets fill evenly`);
    assert.equal(s.evictions, 1000 - s.entries);
  });

  test("recently used entries survive a stream of new ones (LRU within a set)", () => {
    const cache = new InsnCache({ maxEntries: 64 });
    const out = new InsnInfo();
    const nop = hex("90");
    const hot = [0x10, 0x2000, 0x30000, 0x400000];
    for (const ip of hot) cache.lookup(1, 0, ip, Bits64, nop, 0, out);
    let hotMisses = 0;
    for (let i = 0; i < 2000; i++) {
      cache.lookup(1, 0, 0x900000 + i, Bits64, nop, 0, out);
      for (const ip of hot) if (cache.probe(1, 0, ip, Bits64, out) === 0) hotMisses++;
    }
    assert.equal(hotMisses, 0);
  });
});

describe("invalidation", () => {
  function filled(): InsnCache {
    const cache = new InsnCache();
    const out = new InsnInfo();
    // Instructions of CODE at BASE: 0 (5), 5 (6), 11 (1), 12 (1), 13 (5), 18 (1), 19 bad
    for (const off of [0, 5, 11, 12, 13, 18, 19]) cache.lookup(1, 0, BASE + off, Bits64, CODE, off, out);
    cache.lookup(2, 0, BASE, Bits64, CODE, 0, out);
    return cache;
  }
  const cached = (cache: InsnCache, asid: number, off: number) =>
    cache.probe(asid, 0, BASE + off, Bits64, new InsnInfo()) !== 0;

  test("a range drops the instructions that overlap it, including ones that start before it", () => {
    const cache = filled();
    // [BASE+8, BASE+12): overlaps the jcc at 5..11 and the nop at 11; not the nop at 12.
    assert.equal(cache.invalidate(1, 0, BASE + 8, 0, BASE + 12), 2);
    assert.equal(cached(cache, 1, 5), false);
    assert.equal(cached(cache, 1, 11), false);
    assert.equal(cached(cache, 1, 0), true);
    assert.equal(cached(cache, 1, 12), true);
    assert.equal(cached(cache, 2, 0), true, "other address spaces are untouched");
    assert.equal(cache.stats().invalidations, 2);
  });

  test("an empty range drops nothing; a failed decode counts as 15 bytes", () => {
    const cache = filled();
    assert.equal(cache.invalidate(1, 0, BASE + 8, 0, BASE + 8), 0);
    // The bad entry at 19 reaches up to 19 + 15: a change at 30 may make it valid.
    assert.equal(cache.invalidate(1, 0, BASE + 30, 0, BASE + 31), 1);
    assert.equal(cached(cache, 1, 19), false);
  });

  test("ANY_ASID covers every address space; invalidateAsid and clear", () => {
    const cache = filled();
    assert.equal(cache.invalidate(ANY_ASID, 0, BASE, 0, BASE + 1), 2);
    assert.equal(cache.invalidateAsid(1), 6);
    assert.equal(cache.stats().entries, 0);
    const again = filled();
    again.clear();
    assert.equal(again.stats().entries, 0);
    assert.equal(again.stats().invalidations, 8);
    assert.equal(cached(again, 1, 0), false);
  });

  test("ranges across the 2^32 boundary and at the top of the address space", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    const jcc = hex("0f 84 10 00 00 00");
    cache.lookup(1, 0, 0xfffffffe, Bits64, jcc, 0, out); // bytes 0xfffffffe..0x1_00000004
    cache.lookup(1, 0xffffffff, 0xfffffff0, Bits64, jcc, 0, out);
    cache.lookup(1, 0xffffffff, 0xfffffffc, Bits64, jcc, 0, out); // runs past 2^64
    assert.equal(cache.invalidate(1, 1, 0, 1, 1), 1, "[2^32, 2^32+1)");
    assert.equal(cache.invalidate(1, 0xffffffff, 0xfffffff6, 0xffffffff, 0xfffffffc), 0, "ends at the range");
    assert.equal(cache.invalidate(1, 0xffffffff, 0xfffffff5, 0xffffffff, 0xfffffffc), 1);
    assert.equal(cache.invalidate(1, 0xffffffff, 0xfffffffd, 0xffffffff, 0xffffffff), 1);
    assert.equal(cache.stats().entries, 0);
  });

  test("after the bytes change and the range is invalidated, lookups see the new code", () => {
    const cache = new InsnCache();
    const out = new InsnInfo();
    const code = hex("e8 00 00 00 00 c3");
    assert.equal(cache.lookup(1, 0, BASE, Bits64, code, 0, out), 5);
    code.set([0xff, 0xd0], 0); // patched: call rax
    assert.equal(cache.lookup(1, 0, BASE, Bits64, code, 0, out), 5, "stale until invalidated");
    cache.invalidate(1, 0, BASE, 0, BASE + 2);
    assert.equal(cache.lookup(1, 0, BASE, Bits64, code, 0, out), 2);
    assert.equal(out.iclass, InsnClass.CallIndirect);
  });
});

test("property: cached answers equal fresh decodes, through eviction and self-modifying code", () => {
  const op = fc.oneof(
    fc.record({
      kind: fc.constant("lookup" as const),
      at: fc.nat(63),
      mode: fc.constantFrom(Bits16, Bits32, Bits64),
    }),
    fc.record({
      kind: fc.constant("write" as const),
      at: fc.nat(63),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 4 }),
    }),
  );
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 64, maxLength: 64 }),
      fc.array(op, { maxLength: 200 }),
      fc.nat(),
      (initial, ops, hiSeed) => {
        const code = Uint8Array.from(initial);
        const cache = new InsnCache({ maxEntries: 64 });
        const hi = hiSeed % 3 === 0 ? 0xffffffff : 0;
        const base = 0xffffff80;
        const got = new InsnInfo();
        const want = new InsnInfo();
        for (const o of ops) {
          if (o.kind === "write") {
            code.set(o.bytes.subarray(0, 64 - o.at), o.at);
            cache.invalidate(7, hi, base + o.at, hi, base + Math.min(64, o.at + o.bytes.length));
            continue;
          }
          const a = cache.lookup(7, hi, base + o.at, o.mode, code, o.at, got);
          const b = decodeInsn(code, o.at, hi, base + o.at, o.mode, want);
          assert.equal(a, b);
          assert.deepEqual(fields(got), fields(want));
        }
        const s = cache.stats();
        assert.ok(s.entries <= s.capacity);
        assert.equal(s.hits + s.misses, ops.filter((o) => o.kind === "lookup").length);
      },
    ),
    { numRuns: 300 },
  );
});

/**
 * The perf.data reader (decodeRecord) and the pevent sideband reader (readPevent) share
 * one description of the kernel's record layouts: on the records libipt knows, they read
 * the same fields from the same bytes, each in its own value form, and they agree on
 * which records are too short.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/packet/index.js";
import { decodeRecord, type FieldValue, PerfRecord, RecordType, readPevent } from "../../src/perf/index.js";

const TIME = 0x4;
const IDENTITY = { timeShift: 0, timeMult: 1n, timeZero: 0n };

/** Bytes of each record's fixed fields, from include/uapi/linux/perf_event.h (libipt's pevent.h agrees). */
const FIXED_BYTES: Record<number, number> = {
  [RecordType.Mmap]: 32,
  [RecordType.Lost]: 16,
  [RecordType.Comm]: 8,
  [RecordType.Exit]: 24,
  [RecordType.Throttle]: 24,
  [RecordType.Unthrottle]: 24,
  [RecordType.Fork]: 24,
  [RecordType.Mmap2]: 64,
  [RecordType.Aux]: 24,
  [RecordType.ItraceStart]: 8,
  [RecordType.LostSamples]: 8,
  [RecordType.Switch]: 0,
  [RecordType.SwitchCpuWide]: 8,
};
const WITH_STRING = new Set<number>([RecordType.Mmap, RecordType.Comm, RecordType.Mmap2]);

/** Fields decodeRecord derives from misc bits or flags: not in the record's bytes. */
const DERIVED = new Set(["exec", "flagNames", "out", "preempt"]);

/** A record: header, `body`, then a time sample when `time` is given. */
function record(type: number, misc: number, body: ArrayLike<number>, time?: bigint): Uint8Array {
  const b = new Uint8Array(8 + body.length + (time === undefined ? 0 : 8));
  const v = new DataView(b.buffer);
  v.setUint32(0, type, true);
  v.setUint16(4, misc, true);
  v.setUint16(6, b.length, true);
  b.set(body, 8);
  if (time !== undefined) v.setBigUint64(8 + body.length, time, true);
  return b;
}

/** The fields decodeRecord gives for the record of `type`, `misc` and `body`. */
function decodeBody(type: number, misc: number, body: ArrayLike<number>) {
  const rec = new PerfRecord();
  rec.type = type;
  rec.misc = misc;
  rec.bytes = record(type, misc, body);
  rec.size = rec.bytes.length;
  return decodeRecord(rec);
}

/** The body of a `type` record with `fixed` as its field bytes and `name` as its string. */
function body(type: number, fixed: Uint8Array, name: string): number[] {
  const bytes = [...fixed.subarray(0, FIXED_BYTES[type])];
  if (!WITH_STRING.has(type)) return bytes;
  bytes.push(...new TextEncoder().encode(name), 0);
  while (bytes.length % 8) bytes.push(0);
  return bytes;
}

/** Whether a perf.data value and a pevent value are the same field in their two forms. */
function same(perf: FieldValue, pevent: number | bigint | string): boolean {
  if (typeof perf === "number" && typeof pevent === "number") return perf >>> 0 === pevent; // s32 vs u32
  if (typeof perf === "number" && typeof pevent === "bigint") return perf === Number(pevent); // u64n vs exact
  return perf === pevent;
}

const typeArb = fc.constantFrom(...Object.keys(FIXED_BYTES).map(Number));
const nameArb = fc.string({ maxLength: 24 }).filter((s) => !s.includes("\0"));

describe("record layouts shared by decodeRecord and readPevent", () => {
  test("the same fields from the same bytes", () => {
    fc.assert(
      fc.property(
        typeArb,
        fc.integer({ min: 0, max: 0xffff }).filter((m) => !(m & (1 << 14))), // not MMAP2's build-id form
        fc.uint8Array({ minLength: 72, maxLength: 72 }),
        nameArb,
        (type, misc, fixed, name) => {
          const fields = body(type, fixed, name);
          const b = record(type, misc, fields, 1n);
          const pevent = readPevent(b, 0, b.length, TIME, IDENTITY);
          assert.ok(typeof pevent !== "number", `error ${pevent}`);
          // decodeRecord leaves the sample_id trailer to PerfDataReader.sampleId.
          const perf = decodeBody(type, misc, fields);
          assert.equal(perf.problem, undefined);
          for (const [k, v] of Object.entries(pevent.fields)) {
            assert.ok(k in perf.fields, `${k} missing from decodeRecord`);
            assert.ok(same(perf.fields[k]!, v), `${k}: ${perf.fields[k]} vs ${v}`);
          }
          for (const k of Object.keys(perf.fields)) {
            assert.ok(k in pevent.fields || DERIVED.has(k), `${k} missing from readPevent`);
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  test("a record shorter than its fields: a problem for one, NoSync for the other", () => {
    fc.assert(
      fc.property(typeArb, fc.uint8Array({ maxLength: 72 }), (type, bytes) => {
        fc.pre(FIXED_BYTES[type]! > 0);
        const short = bytes.subarray(0, Math.min(bytes.length, FIXED_BYTES[type]! - 1));
        assert.match(decodeBody(type, 0, short).problem ?? "", /too short for its fields/);
        const b = record(type, 0, short);
        assert.equal(readPevent(b, 0, b.length, 0, IDENTITY), -ErrorCode.NoSync);
      }),
      { numRuns: 1000 },
    );
  });

  test("an MMAP2 with every field distinct, read by both", () => {
    const v = new DataView(new ArrayBuffer(72));
    v.setUint32(0, 0xfffffffe, true); // pid -2
    v.setUint32(4, 7, true); // tid
    v.setBigUint64(8, 0xffffffff81000000n, true); // addr: a kernel address, exact
    v.setBigUint64(16, 0x2000n, true); // len
    v.setBigUint64(24, 0x3000n, true); // pgoff
    v.setUint32(32, 8, true); // maj
    v.setUint32(36, 1, true); // min
    v.setBigUint64(40, 0x123456789n, true); // ino
    v.setBigUint64(48, 5n, true); // ino_generation
    v.setUint32(56, 5, true); // prot
    v.setUint32(60, 2, true); // flags
    const bytes = [
      ...new Uint8Array(v.buffer, 0, 64),
      ...new TextEncoder().encode("/lib/x.so\0\0\0\0\0\0\0"),
    ];
    const perf = decodeBody(RecordType.Mmap2, 2, bytes).fields;
    assert.deepEqual(perf, {
      pid: -2,
      tid: 7,
      addr: 0xffffffff81000000n,
      len: 0x2000n,
      pgoff: 0x3000n,
      maj: 8,
      min: 1,
      ino: 0x123456789n,
      inoGeneration: 5n,
      prot: 5,
      flags: 2,
      filename: "/lib/x.so",
    });
    const b = record(RecordType.Mmap2, 2, bytes, 9n);
    const pevent = readPevent(b, 0, b.length, TIME, IDENTITY);
    assert.ok(typeof pevent !== "number");
    assert.deepEqual(pevent.fields, { ...perf, pid: 0xfffffffe });
    assert.equal(pevent.samples.time, 9n);
  });
});

/**
 * The pevent sideband layer: records read with libipt's rules, their text, and the
 * session that orders channels by time, applies records to process contexts and
 * switches the decoder's image where libipt-sb does.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { EventType, PtEvent } from "../../src/event/index.js";
import { ErrorCode } from "../../src/packet/index.js";
import { concatBytes } from "../../src/perf/bytes.js";
import {
  type PeventConfig,
  type PeventRecord,
  readPevent,
  SidebandFormat,
  type SidebandPrint,
  SidebandSession,
  SidebandWarning,
  sidebandRecordText,
} from "../../src/perf/index.js";

const TIME = 0x4;
const TID = 0x2;
const IDENTITY = { timeShift: 0, timeMult: 1n, timeZero: 0n };

/** A record: header, body, then the samples as u64s. */
function record(type: number, misc: number, body: number[], samples: bigint[] = []): Uint8Array {
  const size = 8 + body.length + samples.length * 8;
  const b = new Uint8Array(size);
  const v = new DataView(b.buffer);
  v.setUint32(0, type, true);
  v.setUint16(4, misc, true);
  v.setUint16(6, size, true);
  b.set(body, 8);
  for (const [i, s] of samples.entries()) v.setBigUint64(8 + body.length + i * 8, s, true);
  return b;
}

const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
const u64 = (n: bigint) => [...u32(Number(n & 0xffffffffn)), ...u32(Number(n >> 32n))];
const padded = (s: string) => {
  const bytes = [...new TextEncoder().encode(s), 0];
  while (bytes.length % 8) bytes.push(0);
  return bytes;
};
const mmap = (pid: number, addr: bigint, len: bigint, pgoff: bigint, name: string, time: bigint) =>
  record(1, 2, [...u32(pid), ...u32(pid), ...u64(addr), ...u64(len), ...u64(pgoff), ...padded(name)], [time]);
const itraceStart = (pid: number, time: bigint) => record(12, 0, [...u32(pid), ...u32(pid)], [time]);
const commExec = (pid: number, name: string, time: bigint) =>
  record(3, 1 << 13, [...u32(pid), ...u32(pid), ...padded(name)], [time]);
const lost = (time: bigint) => record(2, 0, [...u64(1n), ...u64(0x100n)], [time]);

const concat = (...parts: Uint8Array[]) => concatBytes(parts);

function read(b: Uint8Array, sampleType = TIME, conv = IDENTITY): PeventRecord {
  const rec = readPevent(b, 0, b.length, sampleType, conv);
  assert.ok(typeof rec !== "number", `error ${rec}`);
  return rec;
}

describe("readPevent", () => {
  test("an MMAP: fields, the padded file name, and the time as TSC", () => {
    const rec = read(mmap(1, 0x1000n, 3n, 0x10n, "a.bin", 7n));
    assert.equal(rec.fields.filename, "a.bin");
    assert.equal(rec.fields.addr, 0x1000n);
    assert.equal(rec.fields.pgoff, 0x10n);
    assert.equal(rec.samples.time, 7n);
    assert.equal(rec.tsc, 7n);
  });

  test("perf time converts with time_zero, time_shift and time_mult; time 0 is TSC 0", () => {
    const conv = { timeShift: 31, timeMult: 581029125n, timeZero: 18444502336406842448n };
    const rec = read(itraceStart(1, 0x4ec21f916c32cn), TIME, conv);
    assert.equal(rec.tsc, 0x2fa1088fabc52an);
    assert.equal(read(itraceStart(1, 0n), TIME, conv).tsc, 0n);
    assert.equal(
      readPevent(itraceStart(1, 5n), 0, 24, TIME, { ...conv, timeMult: 0n }),
      -ErrorCode.BadConfig,
    );
  });

  test("samples in PERF_SAMPLE_* order", () => {
    const b = record(12, 0, [...u32(1), ...u32(2)], [0x0000000400000003n, 9n]);
    const rec = read(b, TID | TIME);
    assert.deepEqual(rec.samples, { pid: 3, tid: 4, time: 9n });
  });

  test("the end of the stream, a record of type 0 and bad sizes", () => {
    const ok = itraceStart(1, 1n);
    assert.equal(readPevent(ok, 0, ok.length - 1, TIME, IDENTITY), -ErrorCode.Eos);
    assert.equal(readPevent(ok, 0, 7, TIME, IDENTITY), -ErrorCode.Eos);
    assert.equal(readPevent(record(0, 0, [0, 0, 0, 0]), 0, 12, TIME, IDENTITY), -ErrorCode.Eos);
    // Samples the sample type does not account for: the size does not match.
    assert.equal(readPevent(ok, 0, ok.length, 0, IDENTITY), -ErrorCode.NoSync);
    const tiny = record(12, 0, []);
    tiny[6] = 4;
    assert.equal(readPevent(tiny, 0, 8, TIME, IDENTITY), -ErrorCode.NoSync);
    const noNul = record(3, 0, [...u32(1), ...u32(1), 0x41, 0x41, 0x41, 0x41]);
    assert.equal(readPevent(noNul, 0, noNul.length, 0, IDENTITY), -ErrorCode.BadPacket);
  });

  test("--pevent:sample-config: the identifier at the end picks the sample type", () => {
    const IDENT = 0x10000;
    const byId = new Map([[7n, TID | TIME | IDENT]]);
    const tagged = record(12, 0, [...u32(1), ...u32(1)], [0x0000000200000002n, 5n, 7n]);
    const rec = readPevent(tagged, 0, tagged.length, TIME, IDENTITY, byId);
    assert.ok(typeof rec !== "number");
    assert.deepEqual(rec.samples, { pid: 2, tid: 2, time: 5n, identifier: 7n });
    // Another identifier: the default sample type (here: the size does not fit it).
    const other = record(12, 0, [...u32(1), ...u32(1)], [0x0000000200000002n, 5n, 8n]);
    assert.equal(readPevent(other, 0, other.length, TIME, IDENTITY, byId), -ErrorCode.NoSync);
    // A configured type without PERF_SAMPLE_IDENTIFIER is a configuration error.
    assert.equal(
      readPevent(tagged, 0, tagged.length, TIME, IDENTITY, new Map([[7n, TIME]])),
      -ErrorCode.BadConfig,
    );
  });

  test("other record types are taken whole, without samples", () => {
    const rec = read(record(0x4f, 0, [1, 2, 3, 4, 5, 6, 7, 8]));
    assert.deepEqual(rec.samples, {});
    assert.equal(rec.size, 16);
  });
});

describe("sidebandRecordText", () => {
  test("compact and verbose", () => {
    const rec = read(commExec(0x1a, "foo", 2n));
    assert.equal(sidebandRecordText(rec, SidebandFormat.Compact), "PERF_RECORD_COMM.EXEC  1a/1a, foo  { 2 }");
    assert.equal(
      sidebandRecordText(rec, SidebandFormat.Verbose),
      "PERF_RECORD_COMM.EXEC\n  pid: 1a\n  tid: 1a\n  comm: foo\n  time: 2",
    );
    assert.equal(
      sidebandRecordText(read(record(0x4f, 0, [])), SidebandFormat.Compact),
      "UNKNOWN  (4f, 0)  { }",
    );
  });
});

const COMPACT: SidebandPrint = { format: SidebandFormat.Compact, filename: true, offset: true, time: true };

function channel(filename: string, bytes: Uint8Array, more: Partial<PeventConfig> = {}): PeventConfig {
  return {
    filename,
    bytes,
    primary: true,
    sampleType: TIME,
    conversion: IDENTITY,
    tscOffset: 0n,
    kernelStart: 0xffff800000000000n,
    sysroot: undefined,
    vdsoX64: undefined,
    vdsoX32: undefined,
    vdsoIa32: undefined,
    ...more,
  };
}

function session(files: Record<string, Uint8Array> = {}) {
  const printed: string[] = [];
  const errors: string[] = [];
  const switches: string[] = [];
  const s = new SidebandSession({
    print: (t) => printed.push(t),
    error: (code, file, offset) => errors.push(`${file}:${offset}:${code}`),
    readFile: (p) => files[p],
    switched: (name) => switches.push(name),
  });
  return { s, printed, errors, switches };
}

function event(type: EventType, tsc: number, ip: bigint): PtEvent {
  const ev = new PtEvent();
  ev.type = type;
  ev.tscLo = tsc;
  ev.ipHi = Number(ip >> 32n);
  ev.ipLo = Number(ip & 0xffffffffn);
  return ev;
}

describe("SidebandSession", () => {
  test("dump: channels merge by time; a channel (re)inserted goes before those due at the same time", () => {
    const { s, printed } = session();
    s.addPevent(channel("a", concat(lost(1n), lost(3n))));
    s.addPevent(channel("b", concat(lost(1n), lost(2n))));
    s.init();
    s.dump(COMPACT, 0, 2);
    assert.deepEqual(
      printed.map((l) => l.slice(0, l.indexOf("PERF"))),
      [
        "a:0000000000000000  0000000000000001  ",
        "b:0000000000000000  0000000000000001  ",
        "b:0000000000000020  0000000000000002  ",
      ],
    );
    s.dumpAll(COMPACT);
    assert.equal(printed.length, 4);
  });

  test("--pevent:tsc-offset applies records earlier, never below 0; a negative one later", () => {
    const { s, printed } = session();
    s.addPevent(channel("a", concat(lost(5n), lost(20n)), { tscOffset: 10n }));
    s.addPevent(channel("b", lost(5n), { tscOffset: (1n << 64n) - 2n }));
    s.init();
    s.dump({ ...COMPACT, filename: false, offset: false }, 0, 6);
    assert.deepEqual(
      printed.map((l) => l.slice(0, 16)),
      ["0000000000000000"],
    );
    s.dump({ ...COMPACT, filename: false, offset: false }, 0, 10);
    assert.deepEqual(
      printed.map((l) => l.slice(0, 16)),
      ["0000000000000000", "0000000000000007", "000000000000000a"],
    );
  });

  test("ITRACE_START switches at once; COMM.EXEC's new context waits for the kernel; MMAP maps the file", () => {
    const file = new Uint8Array(0x20).map((_, i) => i);
    const { s, errors, switches } = session({ "/root/a.bin": file });
    const stream = concat(
      itraceStart(1, 0n),
      mmap(1, 0x1000n, 0x8n, 0x10n, "/a.bin", 1n),
      commExec(1, "b", 2n),
      lost(3n),
    );
    s.addPevent(channel("sb", stream, { sysroot: "/root" }));
    s.init();
    const print: SidebandPrint = { format: 0, filename: false, offset: false, time: false };
    s.event(event(EventType.Enabled, 1, 0x1000n), print);
    assert.deepEqual(switches, ["pid-1"]);
    const first = s.image!;
    const out = new Uint8Array(4);
    // ITRACE_START switched; the MMAP (due at 1) applied in the same event.
    assert.equal(first.read(0, 0x1002, out, 4), 4);
    assert.deepEqual([...out], [0x12, 0x13, 0x14, 0x15]);
    s.event(event(EventType.Tip, 2, 0x1004n), print);
    assert.equal(s.image, undefined, "still in user space: the exec's switch waits");
    s.event(event(EventType.Tip, 3, 0xffff800000001000n), print);
    assert.notEqual(s.image, undefined);
    assert.notEqual(s.image, first);
    assert.deepEqual(switches, ["pid-1", "pid-1"]);
    // The new context's image has no user mappings yet; LOST warned with its offset.
    assert.equal(s.image!.read(0, 0x1002, out, 4) < 0, true);
    assert.deepEqual(errors, [`sb:${stream.length - 32}:${SidebandWarning.Lost}`]);
  });

  test("mmaps that cannot be mapped are reported: //anon, [vdso] without a vdso, missing files", () => {
    const { s, errors } = session();
    const stream = concat(
      mmap(1, 0x1000n, 8n, 0n, "//anon", 1n),
      mmap(1, 0x2000n, 8n, 0n, "[vdso]", 1n),
      mmap(1, 0x3000n, 8n, 0n, "/missing", 1n),
    );
    s.addPevent(channel("sb", stream));
    s.init();
    s.event(event(EventType.Enabled, 2, 0x1000n), { format: 0, filename: false, offset: false, time: false });
    assert.deepEqual(
      errors.map((e) => Number(e.split(":")[2])),
      [SidebandWarning.SectionLost, -ErrorCode.BadConfig, -ErrorCode.BadFile],
    );
  });
});

describe("hostile sideband", () => {
  test("random bytes: records or errors, never an exception, and the session keeps going", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 512 }),
        fc.integer({ min: 0, max: 0x102c6 }),
        (bytes, sampleType) => {
          for (let p = 0; p < bytes.length; p += 8) readPevent(bytes, p, bytes.length, sampleType, IDENTITY);
          const { s } = session({ "/x": new Uint8Array(64) });
          s.addPevent(channel("sb", bytes, { sampleType }));
          s.init();
          const print: SidebandPrint = {
            format: SidebandFormat.Verbose,
            filename: true,
            offset: true,
            time: true,
          };
          s.event(event(EventType.Enabled, 5, 0x1000n), print);
          s.event(event(EventType.Disabled, 0xffffffff, 0xffff800000000000n), print);
          s.dumpAll(print);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("well-formed records with random fields", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom(1, 2, 3, 4, 7, 11, 12, 13, 14, 15),
            fc.integer({ min: 0, max: 0xffff }),
            fc.uint8Array({ minLength: 48, maxLength: 48 }),
          ),
          { maxLength: 20 },
        ),
        (specs) => {
          const parts = specs.map(([type, misc, body]) => {
            const withNul = type === 1 || type === 3 ? [...body.subarray(0, 40), ...padded("/x")] : [...body];
            return record(type, misc, withNul, [BigInt(misc)]);
          });
          const { s } = session({ "/x": new Uint8Array(64) });
          s.addPevent(channel("sb", concat(...parts)));
          s.init();
          const print: SidebandPrint = {
            format: SidebandFormat.Compact,
            filename: false,
            offset: false,
            time: true,
          };
          for (let t = 0; t < 0x10000; t += 0x1000) s.event(event(EventType.Tip, t, BigInt(t) << 32n), print);
        },
      ),
      { numRuns: 100 },
    );
  });
});

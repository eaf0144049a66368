/**
 * The callchain of a SAMPLE record past its READ values (src/perf/sample.ts), as
 * include/uapi/linux/perf_event.h lays them out: single and group read formats,
 * context markers, and records whose counts run past their end (a message, no chain).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSampleChain, ReadFormat, SampleChain, SampleType, sidebandAttr } from "../../src/perf/index.js";
import { Le } from "../../tools/perf/perf-data-writer.js";

const USER = 0xfffffffffffffe00n;

function attr(sampleType: number, readFormat = 0) {
  return { ...sidebandAttr(sampleType), readFormat };
}

/** The chain's entries as BigInts. */
function entries(c: SampleChain): bigint[] {
  return Array.from({ length: c.length }, (_, i) => (BigInt(c.hi[i]!) << 32n) | BigInt(c.lo[i]!));
}

const HEAD = SampleType.Ip | SampleType.Tid | SampleType.Time;
const head = () => new Le().u64(0x401000).u32(7).u32(8).u64(123456);

test("a callchain after a single READ value (time enabled, id)", () => {
  const type = HEAD | SampleType.Read | SampleType.Callchain;
  const b = head().u64(99).u64(1000).u64(42).u64(3).u64(USER).u64(0x401000).u64(0x7f0000001234n).done();
  const c = new SampleChain();
  assert.equal(
    parseSampleChain(b, 0, b.length, attr(type, ReadFormat.TotalTimeEnabled | ReadFormat.Id), c),
    undefined,
  );
  assert.deepEqual(entries(c), [USER, 0x401000n, 0x7f0000001234n]);
  assert.deepEqual([c.isMarker(0), c.isMarker(1), c.isMarker(2)], [true, false, false]);
});

test("a callchain after a READ group (id, lost per value); more entries than the chain held", () => {
  const type = HEAD | SampleType.Read | SampleType.Callchain;
  const f = ReadFormat.Group | ReadFormat.Id | ReadFormat.Lost;
  const le = head().u64(2).u64(1).u64(11).u64(0).u64(2).u64(12).u64(0).u64(40);
  for (let i = 0; i < 40; i++) le.u64(0x400000 + i);
  const b = le.done();
  const c = new SampleChain();
  assert.equal(parseSampleChain(b, 0, b.length, attr(type, f), c), undefined);
  assert.equal(c.length, 40);
  assert.equal(entries(c)[39], 0x400000n + 39n);
});

test("no callchain in the sample_type: an empty chain", () => {
  const b = head().done();
  const c = new SampleChain();
  c.length = 5;
  assert.equal(parseSampleChain(b, 0, b.length, attr(HEAD), c), undefined);
  assert.equal(c.length, 0);
});

test("counts that run past the record: what is wrong, and no chain", () => {
  const type = HEAD | SampleType.Read | SampleType.Callchain;
  const c = new SampleChain();
  // A group of 2^40 values.
  const group = head()
    .u64(2n ** 40n)
    .u64(1)
    .done();
  assert.match(
    parseSampleChain(group, 0, group.length, attr(type, ReadFormat.Group), c) as string,
    /READ group of 1099511627776 values runs past its end/,
  );
  // A chain of 5 entries with 2 there.
  const chain = head().u64(1).u64(5).u64(1).u64(2).done();
  assert.match(
    parseSampleChain(chain, 0, chain.length, attr(type), c) as string,
    /callchain of 5 entries runs past its end/,
  );
  assert.equal(c.length, 0);
  // The record ends before the chain's count.
  const short = head().done();
  assert.match(
    parseSampleChain(short, 0, short.length, attr(HEAD | SampleType.Callchain), c) as string,
    /end before the callchain's count/,
  );
  // Fewer bytes than the leading fields.
  assert.match(
    parseSampleChain(short, 0, 16, attr(HEAD | SampleType.Callchain), c) as string,
    /too few for the fields/,
  );
});

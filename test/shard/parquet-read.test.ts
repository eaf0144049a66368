/**
 * readParquet reads back what writeParquet writes, value for value (64-bit integers as
 * Numbers where exact, bigints past 2^53; several row groups and pages), and refuses
 * what it cannot read (not Parquet, cut short, damaged footers) with a FileDiagnostic
 * naming the byte offset, never a wrong table.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { FileDiagnostic } from "../../src/base/index.js";
import { type ParquetColumn, readParquet, writeParquet } from "../../src/shard/index.js";

/** What readParquet gives for a written value: exact Numbers below 2^53, else bigints. */
function expected(v: unknown): unknown {
  if (typeof v === "bigint") return v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : v;
  return v;
}

test("every type reads back as written, across row groups and pages", () => {
  const columns: ParquetColumn[] = [
    { name: "i32", type: "int32" },
    { name: "i64", type: "int64" },
    { name: "u64", type: "uint64" },
    { name: "d", type: "double" },
    { name: "s", type: "string" },
    { name: "b", type: "bool" },
  ];
  const n = 70_000;
  const values = [
    Array.from({ length: n }, (_, i) => (i % 2 ? -i : i * 3) | 0),
    Array.from({ length: n }, (_, i) => (i % 3 === 0 ? -(2 ** 53) + 1 + i : i * 1e9)),
    Array.from({ length: n }, (_, i) => (i % 5 === 0 ? 0xffffffff81000000n + BigInt(i) : BigInt(i) * 4096n)),
    Array.from({ length: n }, (_, i) => (i === 1 ? -0 : i === 2 ? Number.NaN : i / 7)),
    Array.from({ length: n }, (_, i) =>
      i % 4 === 0 ? "" : i % 4 === 1 ? `f${i}` : i % 4 === 2 ? "π_ünïcode" : "call",
    ),
    Array.from({ length: n }, (_, i) => i % 3 === 0),
  ];
  const table = readParquet(
    writeParquet(columns, values, { rowGroupRows: 30_000, keyValue: { schema: "t" } }),
  );
  assert.deepEqual(
    table.columns,
    columns.map((c) => c.name),
  );
  assert.equal(table.rows, n);
  assert.deepEqual(table.keyValue, { schema: "t" });
  table.values.forEach((got, c) => {
    assert.equal(got.length, n);
    for (let i = 0; i < n; i++)
      assert.deepEqual(got[i], expected(values[c]![i]), `${columns[c]!.name}[${i}]`);
  });
  const empty = readParquet(
    writeParquet(
      columns,
      columns.map(() => []),
    ),
  );
  assert.equal(empty.rows, 0);
  assert.deepEqual(
    empty.values.map((v) => v.length),
    [0, 0, 0, 0, 0, 0],
  );
});

test("random tables read back as written", () => {
  const types = ["int32", "int64", "uint64", "double", "string", "bool"] as const;
  const arb = {
    int32: fc.integer(),
    int64: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    uint64: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    double: fc.double(),
    string: fc.string({ unit: "grapheme" }),
    bool: fc.boolean(),
  };
  fc.assert(
    fc.property(
      fc
        .array(fc.constantFrom(...types), { minLength: 1, maxLength: 5 })
        .chain((ts) =>
          fc.tuple(
            fc.constant(ts),
            fc.array(fc.tuple(...ts.map((t) => arb[t])), { maxLength: 40 }),
            fc.integer({ min: 1, max: 16 }),
          ),
        ),
      ([ts, rows, group]) => {
        const columns = ts.map((type, i) => ({ name: `c${i}`, type }));
        const values = ts.map((_, c) => rows.map((r) => r[c]));
        const table = readParquet(writeParquet(columns, values, { rowGroupRows: group }));
        table.values.forEach((got, c) => {
          assert.deepEqual(Array.from(got), values[c]!.map(expected));
        });
      },
    ),
    { numRuns: 200 },
  );
});

test("what is not a readable Parquet file is refused with a FileDiagnostic", () => {
  const good = writeParquet([{ name: "x", type: "int64" }], [[1, 2, 3]]);
  assert.throws(() => readParquet(new Uint8Array(0)), /not a Parquet file/);
  assert.throws(() => readParquet(new TextEncoder().encode("PAR1 hello PAR1")), /parquet|thrift/);
  assert.throws(() => readParquet(good.subarray(0, good.length - 1)), /not a Parquet file/);
  // Every single-byte change either reads as a table of the same shape or is refused.
  for (let i = 4; i < good.length - 4; i++) {
    const bad = good.slice();
    bad[i]! ^= 0xff;
    try {
      const t = readParquet(bad);
      assert.equal(t.values.length, t.columns.length);
      for (const v of t.values) assert.equal(v.length, t.rows);
    } catch (e) {
      assert.ok(e instanceof FileDiagnostic && /^(parquet|thrift): /.test(e.problem), String(e));
      assert.ok(e.offset >= 0 && e.offset <= bad.length, String(e));
    }
  }
});

test("a damaged file is refused at the byte offset of the damage", () => {
  const good = writeParquet([{ name: "x", type: "int64" }], [[1, 2, 3]]);
  const n = good.length;
  const refusal = (bytes: Uint8Array): FileDiagnostic => {
    try {
      readParquet(bytes);
    } catch (e) {
      assert.ok(e instanceof FileDiagnostic, String(e));
      return e;
    }
    assert.fail("read a damaged file");
  };
  const notParquet = refusal(new Uint8Array(8));
  assert.equal(notParquet.offset, 0);
  assert.equal(notParquet.message, "parquet: not a Parquet file (no PAR1 at both ends) at offset 0x0");
  // The footer's length (the u32 before the closing PAR1) pointing before the file.
  const long = good.slice();
  new DataView(long.buffer).setUint32(n - 8, n, true);
  assert.equal(refusal(long).offset, n - 8);
  // The first page header follows "PAR1": its type (field 1, zigzag in byte 5) made 1, not DATA_PAGE.
  assert.deepEqual(Array.from(good.subarray(4, 6)), [0x15, 0]);
  const page = good.slice();
  page[5] = 2;
  const e = refusal(page);
  assert.deepEqual([e.offset, e.problem], [4, "parquet: column x: not a v1 data page"]);
  // A thrift field of an unknown type (13) where the page header starts.
  const thrift = good.slice();
  thrift[4] = 0x1d;
  assert.deepEqual([refusal(thrift).offset, refusal(thrift).problem], [5, "thrift: unknown type 13"]);
});

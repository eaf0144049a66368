/**
 * writeParquet's files, read back by DuckDB: every type round-trips exactly (edge
 * values included), with the column types DuckDB should see; row groups split where
 * asked; each column chunk's statistics are its exact min and max; key-value metadata
 * is there; empty tables are valid; the bytes are the same every time; bad arguments
 * throw. DuckDB is the only reader used (no other reader is assumed on the host).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import fc from "fast-check";
import { toBigInt } from "../../src/base/halves.js";
import {
  type HalvesColumn,
  type ParquetColumn,
  type ParquetType,
  type ParquetValues,
  writeParquet,
} from "../../src/shard/index.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-parquet-"));
let db: Promise<{ instance: DuckDBInstance; c: DuckDBConnection }> | undefined;
after(async () => {
  if (db) {
    const { instance, c } = await db;
    c.closeSync();
    instance.closeSync();
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The shared in-memory DuckDB, opened on first use. */
function duck(): Promise<DuckDBConnection> {
  db ??= (async () => {
    const instance = await DuckDBInstance.create(":memory:");
    return { instance, c: await instance.connect() };
  })();
  return db.then((d) => d.c);
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const r = await (await duck()).runAndReadAll(sql);
  return r.getRowObjectsJS() as Record<string, unknown>[];
}

/** The file's columns, their values in file order as DuckDB gives them to JavaScript. */
async function readColumns(path: string): Promise<Record<string, unknown[]>> {
  const r = await (await duck()).runAndReadAll(
    `select * exclude (file_row_number) from read_parquet('${path}', file_row_number = true) order by file_row_number`,
  );
  return r.getColumnsObjectJS() as Record<string, unknown[]>;
}

let files = 0;
/** `bytes` in a new file of the temporary folder; its path. */
function save(bytes: Uint8Array): string {
  const path = join(dir, `t${files++}.parquet`);
  writeFileSync(path, bytes);
  return path;
}

function isHalves(v: ParquetValues): v is HalvesColumn {
  return !("length" in v);
}

/** A column's values as DuckDB hands them back: int64 and uint64 as bigints. */
function expectedValues(type: ParquetType, v: ParquetValues): unknown[] {
  if (isHalves(v)) {
    return Array.from(v.hi, (hi, i) => {
      const u = toBigInt(hi, v.lo[i]!);
      return type === "int64" ? BigInt.asIntN(64, u) : u;
    });
  }
  const a = Array.from(v as ArrayLike<unknown>);
  if (type === "int32") return a.map((x) => (x as number) | 0); // -0 is 0 as an int32
  return type === "int64" || type === "uint64" ? a.map((x) => BigInt(x as number | bigint)) : a;
}

/** Write, read back with DuckDB, compare. Returns the file's path. */
async function roundTrip(
  columns: readonly ParquetColumn[],
  values: readonly ParquetValues[],
  rowGroupRows?: number,
): Promise<string> {
  const path = save(writeParquet(columns, values, rowGroupRows === undefined ? {} : { rowGroupRows }));
  // deepStrictEqual tells -0 from 0, and NaN equals NaN.
  const expected = Object.fromEntries(columns.map((c, i) => [c.name, expectedValues(c.type, values[i]!)]));
  assert.deepStrictEqual(await readColumns(path), expected);
  return path;
}

const ALL_TYPES: readonly ParquetColumn[] = [
  { name: "i32", type: "int32" },
  { name: "i64", type: "int64" },
  { name: "u64", type: "uint64" },
  { name: "f64", type: "double" },
  { name: "str", type: "string" },
  { name: "flag", type: "bool" },
];

const DUCKDB_TYPE: Record<ParquetType, string> = {
  int32: "INTEGER",
  int64: "BIGINT",
  uint64: "UBIGINT",
  double: "DOUBLE",
  string: "VARCHAR",
  bool: "BOOLEAN",
};

/** Each column's type as DuckDB reads the file. */
async function duckTypes(path: string): Promise<Record<string, unknown>> {
  const rows = await query(`describe select * from read_parquet('${path}')`);
  return Object.fromEntries(rows.map((r) => [r.column_name, r.column_type]));
}

test("every type round-trips exactly, edge values included", async () => {
  const max = Number.MAX_SAFE_INTEGER;
  const path = await roundTrip(ALL_TYPES, [
    [0, -1, 1, 2147483647, -2147483648, 7, -0, 42],
    [0, -1, 1, max, -max, -(2 ** 32), 2 ** 32 - 1, -(2 ** 31) - 1],
    [0n, 1n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 63n + 1n, 2n ** 64n - 1n, 0xffffffffn, 0x1_0000_0000n],
    [-0, 0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 5e-324, Number.MAX_VALUE, 0.1],
    ["", "a", "é", "日本語", "😀 and \u{10FFFF}", "nul\u0000inside", "\uFFFF", "x".repeat(300)],
    [true, false, false, true, true, true, false, true],
  ]);
  assert.deepStrictEqual(
    await duckTypes(path),
    Object.fromEntries(ALL_TYPES.map((c) => [c.name, DUCKDB_TYPE[c.type]])),
  );
});

test("int64 and uint64 take Numbers, bigints and {hi, lo} halves, at the ends of their ranges", async () => {
  const columns: ParquetColumn[] = [
    { name: "a", type: "int64" },
    { name: "b", type: "int64" },
    { name: "c", type: "int64" },
    { name: "d", type: "uint64" },
    { name: "e", type: "uint64" },
  ];
  await roundTrip(columns, [
    new Float64Array([-(2 ** 53) + 1, 0, 2 ** 53 - 1, -1]),
    [-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n],
    { hi: [0x80000000, 0x7fffffff, 0xffffffff, 0], lo: new Uint32Array([0, 0xffffffff, 0xffffffff, 5]) },
    { hi: new Uint32Array([0xffffffff, 0x80000000, 0, 1]), lo: new Uint32Array([0xffffffff, 0, 0, 2]) },
    [0, 2 ** 53 - 1, 2n ** 64n - 1n, 12345],
  ]);
});

test("the schema: REQUIRED leaves with their physical, converted and logical types; created_by ptkit", async () => {
  const path = save(
    writeParquet(
      ALL_TYPES,
      ALL_TYPES.map(() => []),
    ),
  );
  const schema = await query(
    `select name, type, repetition_type, num_children, converted_type, logical_type from parquet_schema('${path}')`,
  );
  const leaf = (
    name: string,
    type: string,
    converted: string | null = null,
    logical: string | null = null,
  ) => ({
    name,
    type,
    repetition_type: "REQUIRED",
    num_children: null,
    converted_type: converted,
    logical_type: logical,
  });
  assert.deepStrictEqual(schema, [
    {
      name: "schema",
      type: null,
      repetition_type: null,
      num_children: 6n,
      converted_type: null,
      logical_type: null,
    },
    leaf("i32", "INT32"),
    leaf("i64", "INT64"),
    leaf("u64", "INT64", "UINT_64", "IntType(bitWidth=@, isSigned=0)"), // DuckDB prints the i8 64 as '@'
    leaf("f64", "DOUBLE"),
    leaf("str", "BYTE_ARRAY", "UTF8", "StringType()"),
    leaf("flag", "BOOLEAN"),
  ]);
  const [file] = await query(
    `select created_by, num_rows, num_row_groups from parquet_file_metadata('${path}')`,
  );
  assert.deepStrictEqual(file, { created_by: "ptkit", num_rows: 0n, num_row_groups: 0n });
});

test("an empty table is a valid file: 0 rows, the right column types", async () => {
  const path = save(
    writeParquet(
      ALL_TYPES,
      ALL_TYPES.map(() => []),
      { keyValue: { k: "v" } },
    ),
  );
  assert.deepStrictEqual(await readColumns(path), Object.fromEntries(ALL_TYPES.map((c) => [c.name, []])));
  assert.deepStrictEqual(await query(`select count(*) as n from read_parquet('${path}')`), [{ n: 0n }]);
  assert.deepStrictEqual(
    await duckTypes(path),
    Object.fromEntries(ALL_TYPES.map((c) => [c.name, DUCKDB_TYPE[c.type]])),
  );
});

interface ChunkStats {
  group: number;
  column: string;
  min: unknown;
  max: unknown;
}

/**
 * Each chunk's min and max as parquet_metadata shows them, by row group then column:
 * text (doubles: parsed back to numbers, -0 kept), null where left out.
 */
async function chunkStats(path: string, types: readonly ParquetType[]): Promise<ChunkStats[]> {
  const rows = await query(
    `select row_group_id, column_id, path_in_schema, stats_min_value, stats_max_value, stats_null_count,
       encodings, compression
     from parquet_metadata('${path}') order by row_group_id, column_id`,
  );
  return rows.map((r) => {
    assert.equal(r.stats_null_count, 0n);
    assert.equal(r.encodings, "PLAIN, RLE");
    assert.equal(r.compression, "UNCOMPRESSED");
    const double = types[Number(r.column_id)] === "double";
    const stat = (text: unknown) => (text === null || !double ? text : Number(text));
    return {
      group: Number(r.row_group_id),
      column: String(r.path_in_schema),
      min: stat(r.stats_min_value),
      max: stat(r.stats_max_value),
    };
  });
}

/**
 * The min and max of a chunk's values as {@link chunkStats} should show them: in the
 * type's order (strings: by UTF-8 bytes); doubles with a NaN have none, a zero min is
 * -0 and a zero max +0.
 */
function expectedStats(type: ParquetType, values: readonly unknown[]): { min: unknown; max: unknown } {
  if (type === "double") {
    const v = values as number[];
    if (v.some(Number.isNaN)) return { min: null, max: null };
    // DuckDB leaves out infinite double statistics when it reads them.
    const shown = (n: number) => (Number.isFinite(n) ? n : null);
    const min = v.reduce((a, b) => Math.min(a, b));
    const max = v.reduce((a, b) => Math.max(a, b));
    return { min: shown(min === 0 ? -0 : min), max: shown(max === 0 ? 0 : max) };
  }
  const utf8 = (s: unknown) => Buffer.from(s as string, "utf8");
  const compare =
    type === "string"
      ? (a: unknown, b: unknown) => Buffer.compare(utf8(a), utf8(b))
      : (a: unknown, b: unknown) =>
          (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  const sorted = [...values].sort(compare);
  return { min: String(sorted[0]), max: String(sorted.at(-1)) };
}

/** The file's chunk statistics are what {@link expectedStats} says, group by group. */
async function checkStats(
  path: string,
  columns: readonly ParquetColumn[],
  values: readonly ParquetValues[],
  rowGroupRows: number,
): Promise<void> {
  const expected: ChunkStats[] = [];
  const cols = columns.map((c, i) => expectedValues(c.type, values[i]!));
  for (let start = 0, g = 0; start < cols[0]!.length; start += rowGroupRows, g++) {
    for (const [i, c] of columns.entries()) {
      const slice = cols[i]!.slice(start, start + rowGroupRows);
      expected.push({ group: g, column: c.name, ...expectedStats(c.type, slice) });
    }
  }
  const types = columns.map((c) => c.type);
  assert.deepStrictEqual(await chunkStats(path, types), expected);
}

test("row groups split at rowGroupRows; each chunk's statistics are its exact min and max", async () => {
  const values: ParquetValues[] = [
    [5, -3, 9, 0, 2147483647, -2147483648, 1, 1, 1, 8],
    [-5, 3, 2 ** 53 - 1, 0, -(2 ** 53 - 1), 4, 4, 4, -1, 1],
    [2n ** 63n, 1n, 2n ** 63n - 1n, 2n ** 64n - 1n, 0n, 5n, 2n ** 63n + 5n, 7n, 7n, 2n ** 32n],
    [0, -0, 2.5, Number.NaN, 0, 0.5, -0, 3, -0, -1e-300], // zero as min (+0 first) and as max (-0 first)
    ["b", "a", "ab", "\uFFFF", "\u{10000}", "", "é", "e", "z", "Z"],
    [true, true, true, false, false, false, true, false, true, true],
  ];
  const path = await roundTrip(ALL_TYPES, values, 4);
  const groups = await query(
    `select row_group_id, any_value(row_group_num_rows) as n from parquet_metadata('${path}') group by all order by 1`,
  );
  assert.deepStrictEqual(
    groups.map((g) => g.n),
    [4n, 4n, 2n],
  );
  await checkStats(path, ALL_TYPES, values, 4);
  // The readers' pruning trusts those statistics: filters see every row they should.
  const counts = await query(
    `select count(*) filter (u64 >= 9223372036854775808) as big, count(*) filter (i64 < 0) as neg,
       count(*) filter (str > 'y') as after_y, count(*) filter (f64 <= 0.0) as nonpos
     from read_parquet('${path}')`,
  );
  assert.deepStrictEqual(counts, [{ big: 3n, neg: 3n, after_y: 4n, nonpos: 6n }]);
});

test("string statistics longer than 1 KiB are left out, the other end kept", async () => {
  const long = "m".repeat(1025);
  const path = save(writeParquet([{ name: "s", type: "string" }], [["a", long, "b"]]));
  assert.deepStrictEqual(await chunkStats(path, ["string"]), [
    { group: 0, column: "s", min: "a", max: null },
  ]);
});

test("lone surrogates are written as U+FFFD, as TextEncoder writes them, statistics too", async () => {
  const path = save(writeParquet([{ name: "s", type: "string" }], [["\uD800x", "\uDFFF", "\uFFFE"]]));
  assert.deepStrictEqual(await readColumns(path), { s: ["\uFFFDx", "\uFFFD", "\uFFFE"] });
  assert.deepStrictEqual(await chunkStats(path, ["string"]), [
    { group: 0, column: "s", min: "\uFFFD", max: "\uFFFE" },
  ]);
});

test("columns past a page (1 MiB) round-trip: strings, and fixed-width values", async () => {
  const strings = Array.from(
    { length: 5000 },
    (_, i) => `${i % 7 === 0 ? "é" : ""}${"x".repeat(i % 700)}${i}`,
  );
  const stringPath = await roundTrip([{ name: "s", type: "string" }], [strings]);
  // 140,000 doubles are two pages, the int32s one.
  const columns: ParquetColumn[] = [
    { name: "i", type: "int32" },
    { name: "d", type: "double" },
  ];
  const ints = Int32Array.from({ length: 140_000 }, (_, i) => Math.imul(i, 0x9e3779b1));
  const values = [ints, Float64Array.from(ints, (x) => x / 3)];
  const path = await roundTrip(columns, values);
  await checkStats(path, columns, values, ints.length);
  await checkStats(stringPath, [{ name: "s", type: "string" }], [strings], strings.length);
});

test("key-value metadata is in the footer, sorted by key", async () => {
  const path = save(
    writeParquet([{ name: "x", type: "int32" }], [[1]], {
      keyValue: { "ptkit.version": "1", "ptkit.schema": "totals", note: "ünïcode ✓" },
    }),
  );
  const rows = await query(`select key, value from parquet_kv_metadata('${path}')`);
  const text = new TextDecoder();
  assert.deepStrictEqual(
    rows.map((r) => [text.decode(r.key as Uint8Array), text.decode(r.value as Uint8Array)]),
    [
      ["note", "ünïcode ✓"],
      ["ptkit.schema", "totals"],
      ["ptkit.version", "1"],
    ],
  );
});

test("deterministic: the same table gives the same bytes, whatever arrays hold it", () => {
  const columns: ParquetColumn[] = [
    { name: "n", type: "int32" },
    { name: "t", type: "int64" },
    { name: "a", type: "uint64" },
    { name: "name", type: "string" },
    { name: "v", type: "double" },
    { name: "ok", type: "bool" },
  ];
  const write = (values: ParquetValues[], keyValue: Record<string, string>) =>
    writeParquet(columns, values, { rowGroupRows: 2, keyValue });
  // Fresh arrays each time: nothing carries over from one write to the next.
  const plain = (): ParquetValues[] => [
    [1, -2, 3],
    [-1, 2 ** 40, 0],
    [1n, 2n ** 64n - 1n, 0n],
    ["f", "g", "é"],
    [0.5, -0, Number.NaN],
    [true, false, true],
  ];
  const a = write(plain(), { a: "1", b: "2" });
  assert.deepStrictEqual(write(plain(), { a: "1", b: "2" }), a);
  // The same table in other arrays, the metadata in another order.
  const b = write(
    [
      Int32Array.of(1, -2, 3),
      [-1n, 2n ** 40n, 0n],
      { hi: [0, 0xffffffff, 0], lo: [1, 0xffffffff, 0] },
      ["f", "g", "é"],
      Float64Array.of(0.5, -0, Number.NaN),
      [true, false, true],
    ],
    { b: "2", a: "1" },
  );
  assert.deepStrictEqual(b, a);
  // Pinned: a change to the bytes is a change to the format, made on purpose.
  assert.equal(
    createHash("sha256").update(a).digest("hex"),
    "b4c22d76c073ed603d8164ff37b95314c44a428cd94ca91f2f22ea376734bccb",
  );
});

test("bad arguments throw clear errors", () => {
  const int = (name = "x"): ParquetColumn => ({ name, type: "int64" });
  const cases: [() => unknown, RegExp][] = [
    [() => writeParquet([], []), /at least one column/],
    [() => writeParquet([int()], []), /1 columns but 0 value arrays/],
    [() => writeParquet([int("a"), int("b")], [[1, 2], [1]]), /column 1 'b' has 1 rows, column 0 2/],
    [
      () => writeParquet([int()], [[2 ** 53]]),
      /column 0 'x' \(int64\): row 0: 9007199254740992 is not a safe integer/,
    ],
    [() => writeParquet([int()], [[0, 1.5]]), /row 1: 1.5 is not a safe integer/],
    [() => writeParquet([int()], [[2n ** 63n]]), /row 0: 9223372036854775808n is not/],
    [() => writeParquet([int()], [["1"]]), /row 0: "1" is not/],
    [
      () => writeParquet([{ name: "u", type: "uint64" }], [[-1n]]),
      /row 0: -1n is not a safe integer >= 0 or a bigint/,
    ],
    [() => writeParquet([{ name: "u", type: "uint64" }], [[2n ** 64n]]), /uint64's range/],
    [
      () => writeParquet([{ name: "u", type: "uint64" }], [{ hi: [0], lo: [2 ** 32] }]),
      /lo: row 0: 4294967296 is not an unsigned/,
    ],
    [() => writeParquet([{ name: "u", type: "uint64" }], [{ hi: [0, 0], lo: [0] }]), /hi has 2 rows, lo 1/],
    [() => writeParquet([{ name: "i", type: "int32" }], [[2 ** 31]]), /row 0: 2147483648 is not an int32/],
    [() => writeParquet([{ name: "d", type: "double" }], [[1, null]]), /row 1: null is not a number/],
    [() => writeParquet([{ name: "s", type: "string" }], [[1]]), /row 0: 1 is not a string/],
    [() => writeParquet([{ name: "b", type: "bool" }], [[1]]), /row 0: 1 is not a boolean/],
    [
      () => writeParquet([{ name: "f", type: "float" as ParquetType }], [[1]]),
      /column 0 'f' \(float\): unknown type/,
    ],
    [() => writeParquet([{ name: "s", type: "string" }], ["abc" as unknown as string[]]), /not an array/],
    [() => writeParquet([int("a"), int("a")], [[], []]), /'a' \(int64\): the name is used twice/],
    [() => writeParquet([int("")], [[]]), /column 0 has no name/],
    [() => writeParquet([int()], [[1]], { rowGroupRows: 0 }), /rowGroupRows must be a positive integer/],
    [
      () => writeParquet([int()], [[1]], { keyValue: { k: 1 as unknown as string } }),
      /keyValue 'k' is not a string/,
    ],
  ];
  for (const [f, message] of cases)
    assert.throws(f, (e: unknown) => e instanceof Error && message.test(e.message));
});

const TYPES: readonly ParquetType[] = ["int32", "int64", "uint64", "double", "string", "bool"];

function arbitraryValue(type: ParquetType): fc.Arbitrary<unknown> {
  switch (type) {
    case "int32":
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case "int64":
      return fc.oneof(fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
    case "uint64":
      return fc.oneof(fc.maxSafeNat(), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));
    case "double":
      return fc.double();
    case "string":
      return fc.string({ unit: "binary", maxLength: 12 });
    case "bool":
      return fc.boolean();
  }
}

const table = fc
  .record({
    types: fc.array(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 5 }),
    rows: fc.nat({ max: 40 }),
    rowGroupRows: fc.integer({ min: 1, max: 50 }),
  })
  .chain(({ types, rows, rowGroupRows }) =>
    fc
      .tuple(...types.map((t) => fc.array(arbitraryValue(t), { minLength: rows, maxLength: rows })))
      .map((values) => ({
        columns: types.map((type, i): ParquetColumn => ({ name: `c${i}_${type}`, type })),
        values: values as ParquetValues[],
        rowGroupRows,
      })),
  );

test("random tables round-trip through DuckDB, statistics included", async () => {
  await fc.assert(
    fc.asyncProperty(table, async ({ columns, values, rowGroupRows }) => {
      const path = await roundTrip(columns, values, rowGroupRows);
      await checkStats(path, columns, values, rowGroupRows);
    }),
    { numRuns: 30 },
  );
});

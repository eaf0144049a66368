/**
 * Tables written as Parquet files, by hand and deterministically: the same table and
 * options give the same bytes, always (no timestamps, no randomness, nothing from the
 * host). Written for DuckDB, ClickHouse and Spark to read (tested with DuckDB). The
 * layout, from the Apache Parquet format (parquet.thrift):
 *
 *   "PAR1" | row group... | FileMetaData (Thrift compact) | its length (u32 LE) | "PAR1"
 *
 * A row group holds one column chunk per column, in schema order; a chunk is data
 * pages (v1 headers, PLAIN, UNCOMPRESSED, no dictionary), a new page once 1 MiB of
 * values is in one. The schema is flat, a root group and a leaf per column, and every
 * leaf REQUIRED: there are no nulls, and so a page holds no repetition or definition
 * levels, only the values:
 * - int32: INT32, 4 bytes LE; int64: INT64, 8 bytes LE (two's complement);
 * - uint64: INT64 annotated UINT_64 and IntType(64, unsigned), 8 bytes LE;
 * - double: DOUBLE, 8 bytes LE (-0, NaN and the infinities as they are);
 * - string: BYTE_ARRAY annotated UTF8 and StringType, a u32 LE length, then UTF-8;
 * - bool: BOOLEAN, bit-packed, the first value in the lowest bit.
 *
 * Column chunks carry statistics: null_count 0, and the exact min_value and max_value
 * in each type's own order (column_orders says TypeDefinedOrder): signed for int32 and
 * int64, unsigned for uint64, false < true, byte-wise over the UTF-8 for strings. A
 * double chunk carries its nan_count, and min/max only when it has no NaN (readers
 * disagree about where NaN sorts; one that sorts it last must not skip the chunk);
 * a zero minimum is written -0 and a zero maximum +0, as the format asks. A string
 * min or max longer than 1 KiB is left out rather than truncated.
 *
 * An empty table is a file with the schema and no row group. Key-value metadata
 * goes in the footer sorted by key; created_by is "ptkit".
 */
import { ByteBuf } from "./byte-buf.js";
import { CompactWriter, CType } from "./thrift-compact.js";

export type ParquetType = "int32" | "int64" | "uint64" | "double" | "string" | "bool";

export interface ParquetColumn {
  readonly name: string;
  readonly type: ParquetType;
}

/**
 * A column of 64-bit values as ptkit keeps them: unsigned 32-bit halves, row by row
 * (for int64, the two's complement bit pattern).
 */
export interface HalvesColumn {
  readonly hi: ArrayLike<number>;
  readonly lo: ArrayLike<number>;
}

/**
 * One column's values, row by row (all columns the same length):
 * - int32: integers in [-2^31, 2^31) (number[], Int32Array...);
 * - int64: safe integers (number[], Float64Array), bigints in [-2^63, 2^63)
 *   (bigint[], BigInt64Array), or a {@link HalvesColumn};
 * - uint64: bigints in [0, 2^64) (bigint[], BigUint64Array), safe integers >= 0, or a
 *   {@link HalvesColumn};
 * - double: numbers; string: strings (lone surrogates are written as U+FFFD, as
 *   TextEncoder does); bool: booleans.
 * No nulls: every column is REQUIRED.
 */
export type ParquetValues = ArrayLike<unknown> | HalvesColumn;

export interface ParquetOptions {
  /** Rows per row group (the last may have fewer); default 1,000,000. */
  readonly rowGroupRows?: number;
  /** Key-value metadata for the footer (ptkit's schema name and version). */
  readonly keyValue?: Readonly<Record<string, string>>;
}

const DEFAULT_ROW_GROUP_ROWS = 1_000_000;
/** A page ends once this many bytes of values are in it. */
const PAGE_BYTES = 1 << 20;
/** String statistics longer than this are left out. */
const MAX_STAT_BYTES = 1024;
const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]); // "PAR1"
const CREATED_BY = "ptkit";
const ROOT_NAME = "schema";

// parquet.thrift's enums, the values used here.
const Physical = { BOOLEAN: 0, INT32: 1, INT64: 2, DOUBLE: 5, BYTE_ARRAY: 6 } as const;
const Converted = { UTF8: 0, UINT_64: 14 } as const;
const REQUIRED = 0;
const Encoding = { PLAIN: 0, RLE: 3 } as const;
const UNCOMPRESSED = 0;
const DATA_PAGE = 0;

const PHYSICAL: Record<ParquetType, number> = {
  int32: Physical.INT32,
  int64: Physical.INT64,
  uint64: Physical.INT64,
  double: Physical.DOUBLE,
  string: Physical.BYTE_ARRAY,
  bool: Physical.BOOLEAN,
};

/** A column's values, checked, in the form its pages are written from. */
type Prepared =
  | { readonly kind: "int32" | "double"; readonly v: ArrayLike<number> }
  | { readonly kind: "int64" | "uint64"; readonly hi: ArrayLike<number>; readonly lo: ArrayLike<number> }
  | { readonly kind: "string"; readonly v: ArrayLike<string> }
  | { readonly kind: "bool"; readonly v: ArrayLike<boolean> };

/** A column chunk's statistics, its min and max PLAIN-encoded (strings without length). */
interface Stats {
  readonly min: Uint8Array | null;
  readonly max: Uint8Array | null;
  /** Doubles only (else -1). */
  readonly nans: number;
}

interface Chunk {
  /** Where its first page starts in the file. */
  readonly offset: number;
  /** Its bytes, page headers included. */
  readonly size: number;
  readonly stats: Stats;
}

interface RowGroup {
  readonly rows: number;
  readonly chunks: readonly Chunk[];
}

/**
 * The Parquet file of a table: `values[i]` holds column `columns[i]`'s values (see
 * {@link ParquetValues}). Throws an Error for bad arguments (no columns, a name empty
 * or repeated, an unknown type, columns of different lengths, a value out of its
 * type's range), all programming errors.
 */
export function writeParquet(
  columns: readonly ParquetColumn[],
  values: readonly ParquetValues[],
  options: ParquetOptions = {},
): Uint8Array {
  if (columns.length === 0) throw new Error("writeParquet: a table needs at least one column");
  if (values.length !== columns.length) {
    throw new Error(`writeParquet: ${columns.length} columns but ${values.length} value arrays`);
  }
  const groupRows = options.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS;
  if (!Number.isSafeInteger(groupRows) || groupRows < 1) {
    throw new Error(`writeParquet: rowGroupRows must be a positive integer, not ${groupRows}`);
  }
  const keyValue = checkKeyValue(options.keyValue ?? {});
  const names = new Set<string>();
  const prepared = columns.map((c, i) => {
    const where = `writeParquet: column ${i} '${c.name}' (${c.type})`;
    if (typeof c.name !== "string" || c.name === "") throw new Error(`writeParquet: column ${i} has no name`);
    if (names.has(c.name)) throw new Error(`${where}: the name is used twice`);
    names.add(c.name);
    return prepare(c.type, values[i]!, where);
  });
  const rows = rowCount(prepared[0]!);
  prepared.forEach((p, i) => {
    if (rowCount(p) !== rows) {
      throw new Error(
        `writeParquet: column ${i} '${columns[i]!.name}' has ${rowCount(p)} rows, column 0 ${rows}`,
      );
    }
  });

  const estimate = 4096 + rows * prepared.reduce((sum, p) => sum + WIDTH[p.kind], 0);
  const w = new CompactWriter(new ByteBuf(estimate));
  // Where string pages are put together (their size is known only once written).
  const page = new ByteBuf(prepared.some((p) => p.kind === "string") ? Math.min(PAGE_BYTES, estimate) : 0);
  w.out.append(MAGIC);
  const groups: RowGroup[] = [];
  for (let start = 0; start < rows; start += groupRows) {
    const end = Math.min(rows, start + groupRows);
    groups.push({ rows: end - start, chunks: prepared.map((p) => writeChunk(w, page, p, start, end)) });
  }
  const footer = w.out.length;
  writeFileMetaData(w, columns, rows, groups, keyValue);
  w.out.u32(w.out.length - footer);
  w.out.append(MAGIC);
  return w.out.toArray();
}

/** Bytes per value, PLAIN (strings: a guess, to size the file's buffer at the start). */
const WIDTH: Record<Prepared["kind"], number> = {
  int32: 4,
  int64: 8,
  uint64: 8,
  double: 8,
  string: 24,
  bool: 1 / 8,
};

function rowCount(p: Prepared): number {
  return "v" in p ? p.v.length : p.lo.length;
}

// ---- Arguments ------------------------------------------------------------------

const TWO_32 = 2 ** 32;
const INT64_MIN = -(2n ** 63n);
const INT64_END = 2n ** 63n;
const UINT64_END = 2n ** 64n;

function prepare(type: ParquetType, values: ParquetValues, where: string): Prepared {
  switch (type) {
    case "int32":
      if (values instanceof Int32Array) return { kind: type, v: values };
      return {
        kind: type,
        v: checked(values, where, "an int32", (x) => typeof x === "number" && (x | 0) === x),
      };
    case "double":
      if (values instanceof Float64Array) return { kind: type, v: values };
      return { kind: type, v: checked(values, where, "a number", (x) => typeof x === "number") };
    case "string":
      return { kind: type, v: checked(values, where, "a string", (x) => typeof x === "string") };
    case "bool":
      return { kind: type, v: checked(values, where, "a boolean", (x) => typeof x === "boolean") };
    case "int64":
    case "uint64":
      return { kind: type, ...halves(values, type === "int64", where) };
    default:
      throw new Error(`${where}: unknown type (one of int32, int64, uint64, double, string, bool)`);
  }
}

function isArrayLike(values: unknown): values is ArrayLike<unknown> {
  return (
    typeof values === "object" && values !== null && typeof (values as ArrayLike<unknown>).length === "number"
  );
}

/** `values`, every one of them passing `ok`. */
function checked<T>(values: unknown, where: string, what: string, ok: (x: unknown) => unknown): ArrayLike<T> {
  if (!isArrayLike(values)) throw new Error(`${where}: the values are not an array`);
  for (let i = 0; i < values.length; i++) {
    if (!ok(values[i])) throw new Error(`${where}: row ${i}: ${show(values[i])} is not ${what}`);
  }
  return values as ArrayLike<T>;
}

/** A value as an error message shows it. */
function show(x: unknown): string {
  if (typeof x === "bigint") return `${x}n`;
  if (typeof x === "string") return JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}...` : x);
  return String(x);
}

/**
 * int64 or uint64 values as unsigned 32-bit halves, checked: Numbers and bigints are
 * split into new arrays (8 bytes a row), so that one loop writes every form.
 */
function halves(values: ParquetValues, signed: boolean, where: string): HalvesColumn {
  if (!isArrayLike(values)) {
    if (typeof values !== "object" || values === null || !isArrayLike(values.hi) || !isArrayLike(values.lo)) {
      throw new Error(`${where}: the values are neither an array nor {hi, lo} arrays`);
    }
    if (values.hi.length !== values.lo.length) {
      throw new Error(`${where}: hi has ${values.hi.length} rows, lo ${values.lo.length}`);
    }
    const u32 = (x: unknown) => Number.isInteger(x) && (x as number) >= 0 && (x as number) < TWO_32;
    const half = (v: ArrayLike<unknown>, name: string) =>
      v instanceof Uint32Array ? v : checked<number>(v, `${where} ${name}`, "an unsigned 32-bit half", u32);
    return { hi: half(values.hi, "hi"), lo: half(values.lo, "lo") };
  }
  const n = values.length;
  const hi = new Uint32Array(n);
  const lo = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (typeof x === "number" && Number.isSafeInteger(x) && (signed || x >= 0)) {
      const h = Math.floor(x / TWO_32);
      hi[i] = h; // a negative h wraps to its two's complement bits
      lo[i] = x - h * TWO_32;
    } else if (
      typeof x === "bigint" &&
      (signed ? x >= INT64_MIN && x < INT64_END : x >= 0n && x < UINT64_END)
    ) {
      hi[i] = Number((x >> 32n) & 0xffffffffn);
      lo[i] = Number(x & 0xffffffffn);
    } else {
      const what = signed
        ? "a safe integer or a bigint in int64's range"
        : "a safe integer >= 0 or a bigint in uint64's range";
      throw new Error(`${where}: row ${i}: ${show(x)} is not ${what}`);
    }
  }
  return { hi, lo };
}

function checkKeyValue(kv: Readonly<Record<string, string>>): [string, string][] {
  const entries = Object.entries(kv);
  for (const [k, v] of entries) {
    if (typeof v !== "string") throw new Error(`writeParquet: keyValue '${k}' is not a string`);
  }
  // Sorted: the bytes do not depend on the order the record was built in.
  return entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

// ---- Pages ----------------------------------------------------------------------

/** What a chunk's statistics come from, gathered as its pages are written. */
class Extremes {
  /** int32, double (NaN left out), bool (0, 1): the least and the greatest value. */
  lo = Number.POSITIVE_INFINITY;
  hi = Number.NEGATIVE_INFINITY;
  nans = 0;
  /** int64, uint64: the rows of the least and the greatest value. */
  minRow = -1;
  maxRow = -1;
  /** string: the least and the greatest value's UTF-8 so far. */
  minBytes: Uint8Array | null = null;
  maxBytes: Uint8Array | null = null;
}

/** Rows [start, end) of a column as a column chunk, its pages appended to `w.out`. */
function writeChunk(w: CompactWriter, page: ByteBuf, col: Prepared, start: number, end: number): Chunk {
  const out = w.out;
  const offset = out.length;
  const x = new Extremes();
  for (let row = start; row < end; ) {
    let next: number;
    if (col.kind === "string") {
      page.clear();
      next = encodeStrings(page, col.v, row, end, x);
      writePageHeader(w, next - row, page.length);
      out.append(page.bytes());
    } else {
      // Fixed-width values: the page's size is known before they are written.
      next = Math.min(end, row + PAGE_BYTES / WIDTH[col.kind]);
      writePageHeader(w, next - row, Math.ceil((next - row) * WIDTH[col.kind]));
      encodeFixed(out, col, row, next, x);
    }
    row = next;
  }
  return { offset, size: out.length - offset, stats: statistics(col, x) };
}

/** Rows [from, to) of a fixed-width column, PLAIN: a data page's values. */
function encodeFixed(
  out: ByteBuf,
  col: Exclude<Prepared, { kind: "string" }>,
  from: number,
  to: number,
  x: Extremes,
): void {
  switch (col.kind) {
    case "int32": {
      const v = col.v;
      for (let i = from; i < to; i++) {
        const n = v[i]!;
        out.u32(n);
        if (n < x.lo) x.lo = n;
        if (n > x.hi) x.hi = n;
      }
      return;
    }
    case "double": {
      const v = col.v;
      for (let i = from; i < to; i++) {
        const n = v[i]!;
        out.f64(n);
        if (Number.isNaN(n)) x.nans++;
        else {
          if (n < x.lo) x.lo = n;
          if (n > x.hi) x.hi = n;
        }
      }
      return;
    }
    case "int64":
    case "uint64": {
      const { hi, lo } = col;
      const signed = col.kind === "int64";
      if (x.minRow < 0) x.minRow = x.maxRow = from;
      for (let i = from; i < to; i++) {
        out.u32(lo[i]!);
        out.u32(hi[i]!);
        if (less64(hi, lo, i, x.minRow, signed)) x.minRow = i;
        if (less64(hi, lo, x.maxRow, i, signed)) x.maxRow = i;
      }
      return;
    }
    case "bool": {
      const v = col.v;
      let byte = 0;
      let bit = 0;
      for (let i = from; i < to; i++) {
        const b = v[i] ? 1 : 0;
        byte |= b << bit;
        if (b < x.lo) x.lo = b;
        if (b > x.hi) x.hi = b;
        if (++bit === 8) {
          out.u8(byte);
          byte = 0;
          bit = 0;
        }
      }
      if (bit > 0) out.u8(byte);
      return;
    }
  }
}

/** Whether row a's 64-bit value is less than row b's. */
function less64(
  hi: ArrayLike<number>,
  lo: ArrayLike<number>,
  a: number,
  b: number,
  signed: boolean,
): boolean {
  const ha = signed ? hi[a]! | 0 : hi[a]!;
  const hb = signed ? hi[b]! | 0 : hi[b]!;
  return ha < hb || (ha === hb && lo[a]! < lo[b]!);
}

/**
 * A data page of strings from row `from` on, each a u32 length and UTF-8, until the
 * page is full: returns the row after its last.
 */
function encodeStrings(page: ByteBuf, v: ArrayLike<string>, from: number, end: number, x: Extremes): number {
  // The page's least and greatest value, compared where they lie in the page.
  let minAt = -1;
  let minLen = 0;
  let maxAt = -1;
  let maxLen = 0;
  let i = from;
  for (; i < end && page.length < PAGE_BYTES; i++) {
    const lengthAt = page.length;
    page.u32(0);
    const n = page.utf8(v[i]!);
    page.patchU32(lengthAt, n);
    const at = lengthAt + 4;
    const d = page.data;
    if (minAt < 0 || compareBytes(d, at, n, d, minAt, minLen) < 0) {
      minAt = at;
      minLen = n;
    }
    if (maxAt < 0 || compareBytes(d, at, n, d, maxAt, maxLen) > 0) {
      maxAt = at;
      maxLen = n;
    }
  }
  const d = page.data;
  const min = x.minBytes;
  if (min === null || compareBytes(d, minAt, minLen, min, 0, min.length) < 0) {
    x.minBytes = d.slice(minAt, minAt + minLen);
  }
  const max = x.maxBytes;
  if (max === null || compareBytes(d, maxAt, maxLen, max, 0, max.length) > 0) {
    x.maxBytes = d.slice(maxAt, maxAt + maxLen);
  }
  return i;
}

/** Unsigned byte-wise comparison of a[aAt, aAt + aLen) with b[bAt, bAt + bLen). */
function compareBytes(
  a: Uint8Array,
  aAt: number,
  aLen: number,
  b: Uint8Array,
  bAt: number,
  bLen: number,
): number {
  const n = Math.min(aLen, bLen);
  for (let k = 0; k < n; k++) {
    const d = a[aAt + k]! - b[bAt + k]!;
    if (d !== 0) return d;
  }
  return aLen - bLen;
}

/** A chunk's min and max, PLAIN-encoded, from what its pages gathered. */
function statistics(col: Prepared, x: Extremes): Stats {
  switch (col.kind) {
    case "int32":
      return { min: plain32(x.lo), max: plain32(x.hi), nans: -1 };
    case "int64":
    case "uint64":
      return {
        min: plain64(col.hi[x.minRow]!, col.lo[x.minRow]!),
        max: plain64(col.hi[x.maxRow]!, col.lo[x.maxRow]!),
        nans: -1,
      };
    case "double":
      if (x.nans > 0) return { min: null, max: null, nans: x.nans };
      // -0 and +0 compare equal: whichever came first is the min or max. The format
      // asks for -0 as a zero min and +0 as a zero max.
      return { min: plainDouble(x.lo === 0 ? -0 : x.lo), max: plainDouble(x.hi === 0 ? 0 : x.hi), nans: 0 };
    case "bool":
      return { min: new Uint8Array([x.lo]), max: new Uint8Array([x.hi]), nans: -1 };
    case "string": {
      const fits = (b: Uint8Array | null) => (b !== null && b.length <= MAX_STAT_BYTES ? b : null);
      return { min: fits(x.minBytes), max: fits(x.maxBytes), nans: -1 };
    }
  }
}

function plain32(v: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return b;
}

function plain64(hi: number, lo: number): Uint8Array {
  const b = new Uint8Array(8);
  const view = new DataView(b.buffer);
  view.setUint32(0, lo, true);
  view.setUint32(4, hi, true);
  return b;
}

function plainDouble(v: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, v, true);
  return b;
}

// ---- Thrift structures ----------------------------------------------------------

function writePageHeader(w: CompactWriter, values: number, size: number): void {
  w.begin(); // PageHeader
  w.i32(1, DATA_PAGE);
  w.i32(2, size); // uncompressed_page_size
  w.i32(3, size); // compressed_page_size
  w.struct(5); // DataPageHeader
  w.i32(1, values);
  w.i32(2, Encoding.PLAIN);
  // Required by the struct; there are no levels to encode.
  w.i32(3, Encoding.RLE);
  w.i32(4, Encoding.RLE);
  w.end();
  w.end();
}

function writeFileMetaData(
  w: CompactWriter,
  columns: readonly ParquetColumn[],
  rows: number,
  groups: readonly RowGroup[],
  keyValue: readonly [string, string][],
): void {
  w.begin();
  w.i32(1, 1); // version
  w.list(2, CType.Struct, columns.length + 1); // schema: the root, then its leaves
  w.begin();
  w.string(4, ROOT_NAME);
  w.i32(5, columns.length); // num_children
  w.end();
  for (const c of columns) writeSchemaElement(w, c);
  w.i64(3, rows);
  w.list(4, CType.Struct, groups.length);
  for (const g of groups) writeRowGroup(w, columns, g);
  if (keyValue.length > 0) {
    w.list(5, CType.Struct, keyValue.length);
    for (const [key, value] of keyValue) {
      w.begin();
      w.string(1, key);
      w.string(2, value);
      w.end();
    }
  }
  w.string(6, CREATED_BY);
  // column_orders: TypeDefinedOrder for every column, what min_value/max_value follow.
  w.list(7, CType.Struct, columns.length);
  for (let i = 0; i < columns.length; i++) {
    w.begin();
    w.empty(1);
    w.end();
  }
  w.end();
}

function writeSchemaElement(w: CompactWriter, c: ParquetColumn): void {
  w.begin();
  w.i32(1, PHYSICAL[c.type]);
  w.i32(3, REQUIRED);
  w.string(4, c.name);
  if (c.type === "string") {
    w.i32(6, Converted.UTF8);
    w.struct(10); // LogicalType
    w.empty(1); // STRING
    w.end();
  } else if (c.type === "uint64") {
    w.i32(6, Converted.UINT_64);
    w.struct(10); // LogicalType
    w.struct(10); // INTEGER
    w.i8(1, 64); // bitWidth
    w.bool(2, false); // isSigned
    w.end();
    w.end();
  }
  w.end();
}

function writeRowGroup(w: CompactWriter, columns: readonly ParquetColumn[], g: RowGroup): void {
  const bytes = g.chunks.reduce((sum, c) => sum + c.size, 0);
  w.begin();
  w.list(1, CType.Struct, g.chunks.length);
  g.chunks.forEach((chunk, i) => {
    const c = columns[i]!;
    w.begin(); // ColumnChunk
    w.i64(2, 0); // file_offset: deprecated, 0 when no ColumnMetaData lies outside the footer
    w.struct(3); // ColumnMetaData
    w.i32(1, PHYSICAL[c.type]);
    w.list(2, CType.I32, 2); // encodings
    w.i32Element(Encoding.PLAIN);
    w.i32Element(Encoding.RLE);
    w.list(3, CType.Binary, 1); // path_in_schema
    w.stringElement(c.name);
    w.i32(4, UNCOMPRESSED);
    w.i64(5, g.rows); // num_values
    w.i64(6, chunk.size); // total_uncompressed_size
    w.i64(7, chunk.size); // total_compressed_size
    w.i64(9, chunk.offset); // data_page_offset
    writeStatistics(w, chunk.stats);
    w.end();
    w.end();
  });
  w.i64(2, bytes); // total_byte_size
  w.i64(3, g.rows);
  w.i64(5, g.chunks[0]!.offset); // file_offset
  w.i64(6, bytes); // total_compressed_size
  w.end();
}

function writeStatistics(w: CompactWriter, s: Stats): void {
  w.struct(12);
  w.i64(3, 0); // null_count
  if (s.max !== null) w.binary(5, s.max); // max_value
  if (s.min !== null) w.binary(6, s.min); // min_value
  if (s.max !== null) w.bool(7, true); // is_max_value_exact
  if (s.min !== null) w.bool(8, true); // is_min_value_exact
  if (s.nans >= 0) w.i64(9, s.nans); // nan_count
  w.end();
}

/**
 * Reading back the Parquet files {@link writeParquet} writes (and others of the same
 * shape): flat REQUIRED columns in v1 data pages, PLAIN, uncompressed. Columns come
 * out whole (no row objects): INT32 and DOUBLE as Numbers, INT64 (signed or UINT_64)
 * as Numbers where exact (|v| < 2^53) and bigints past that, BYTE_ARRAY as strings,
 * BOOLEAN as booleans.
 * Anything else (other encodings, compression, nested or optional columns), and any
 * damage, is refused with a {@link FileDiagnostic} saying what and at which byte
 * offset: the shard merge reads its own files this way, without a database and a row
 * object per value.
 */
import { FileDiagnostic } from "../base/diagnostic.js";
import { ErrorCode } from "../base/errors.js";
import { toBigInt } from "../base/halves.js";
import { CompactReader, type CompactStruct, type CompactValue } from "./thrift-compact.js";

/** A table read back: its columns' names and values, and its key-value metadata. */
export interface ParquetTable {
  columns: string[];
  /** Per column: numbers in a Float64Array, unless some need a bigint (then an array). */
  values: ArrayLike<unknown>[];
  rows: number;
  keyValue: Record<string, string>;
}

const MAGIC = [0x50, 0x41, 0x52, 0x31]; // "PAR1"
const Physical = { BOOLEAN: 0, INT32: 1, INT64: 2, DOUBLE: 5, BYTE_ARRAY: 6 } as const;
const UINT_64 = 14;
const decoder = new TextDecoder();

/** The file cannot be read on: what is wrong at byte offset `at`. */
const bad = (at: number, what: string): FileDiagnostic =>
  new FileDiagnostic(ErrorCode.BadFile, at, `parquet: ${what}`);

const struct = (s: CompactStruct, id: number): CompactStruct | undefined => {
  const v = s.get(id);
  return v instanceof Map ? v : undefined;
};
/** Field `id` of a struct read at byte offset `at` (a footer or a page header). */
const int = (s: CompactStruct | undefined, id: number, at: number): number => {
  const v = s?.get(id);
  if (typeof v !== "number") throw bad(at, `field ${id} missing`);
  return v;
};
/** A list of structs (an absent field: none). */
const structs = (s: CompactStruct | undefined, id: number, at: number): CompactStruct[] => {
  const v = s?.get(id);
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((e) => e instanceof Map))
    throw bad(at, `field ${id} is not a list of structs`);
  return v as CompactStruct[];
};
const text = (v: CompactValue | undefined): string => (v instanceof Uint8Array ? decoder.decode(v) : "");

export function readParquet(bytes: Uint8Array): ParquetTable {
  const n = bytes.length;
  if (n < 12 || MAGIC.some((b, i) => bytes[i] !== b || bytes[n - 4 + i] !== b))
    throw bad(0, "not a Parquet file (no PAR1 at both ends)");
  const footerLength = new DataView(bytes.buffer, bytes.byteOffset + n - 8, 4).getUint32(0, true);
  if (footerLength > n - 12) throw bad(n - 8, "the footer's length is past the file");
  // Footer fields are reported at the footer's start (its structs carry no offsets).
  const footer = n - 8 - footerLength;
  const meta = new CompactReader(bytes, footer).struct();
  const schema = structs(meta, 2, footer);
  const leaves = schema.slice(1);
  const columns = leaves.map((e) => text(e.get(4)));
  const kinds = leaves.map((e) => {
    if (e.get(3) !== 0) throw bad(footer, `column ${text(e.get(4))} is not REQUIRED`);
    return { physical: int(e, 1, footer), unsigned: e.get(6) === UINT_64 };
  });
  if (int(schema[0], 5, footer) !== leaves.length) throw bad(footer, "nested columns");
  const rows = int(meta, 3, footer);
  // Every value takes a bit at least: more rows than that is a damaged footer.
  if (!Number.isSafeInteger(rows) || rows < 0 || rows > 8 * n) throw bad(footer, `${rows} rows`);
  const values = kinds.map((k) => new Column(k.physical, rows));
  for (const group of structs(meta, 4, footer)) {
    structs(group, 1, footer).forEach((chunk, c) => {
      const cm = struct(chunk, 3);
      const kind = kinds[c];
      if (kind === undefined) throw bad(footer, "more column chunks than columns");
      if (int(cm, 4, footer) !== 0) throw bad(footer, `column ${columns[c]} is compressed`);
      let want = int(cm, 5, footer);
      let at = int(cm, 9, footer);
      const out = values[c]!;
      while (want > 0) {
        if (!Number.isSafeInteger(at) || at < 0 || at >= n)
          throw bad(footer, `column ${columns[c]}: a page at ${at}, outside the file`);
        const reader = new CompactReader(bytes, at);
        const header = reader.struct();
        const size = int(header, 3, at);
        const page = struct(header, 5);
        if (int(header, 1, at) !== 0 || page === undefined)
          throw bad(at, `column ${columns[c]}: not a v1 data page`);
        if (int(page, 2, at) !== 0) throw bad(at, `column ${columns[c]}: not PLAIN`);
        const count = int(page, 1, at);
        if (size < 0 || count <= 0) throw bad(at, `column ${columns[c]}: a bad page header`);
        if (reader.at + size > n || count > want) throw bad(at, `column ${columns[c]}: a page past its end`);
        const pageBytes = bytes.subarray(reader.at, reader.at + size);
        decodePlain(pageBytes, reader.at, count, kind.physical, kind.unsigned, out);
        at = reader.at + size;
        want -= count;
      }
    });
  }
  for (const [c, v] of values.entries())
    if (v.length !== rows) throw bad(footer, `column ${columns[c]} has ${v.length} values for ${rows} rows`);
  const keyValue: Record<string, string> = {};
  for (const kv of structs(meta, 5, footer)) keyValue[text(kv.get(1))] = text(kv.get(2));
  return { columns, values: values.map((v) => v.values()), rows, keyValue };
}

/** Short strings already made, by their bytes (kinds and names repeat a lot). */
const shortStrings = new Map<number, string>();

/** A string from UTF-8 bytes: short ASCII ones (kinds, names) without the decoder. */
function utf8(bytes: Uint8Array, from: number, length: number): string {
  if (length <= 6) {
    // Up to 6 bytes and the length make one exact Number key.
    let key = length;
    let ascii = true;
    for (let i = from; i < from + length; i++) {
      const b = bytes[i]!;
      if (b >= 0x80) ascii = false;
      key = key * 256 + b;
    }
    if (ascii) {
      let s = shortStrings.get(key);
      if (s === undefined) {
        s = String.fromCharCode(...bytes.subarray(from, from + length));
        if (shortStrings.size < 4096) shortStrings.set(key, s);
      }
      return s;
    }
  }
  return decoder.decode(bytes.subarray(from, from + length));
}

/**
 * A column's values as they are read: numbers into a Float64Array (no number boxed
 * per value), others (or numbers once a bigint is needed) into an array.
 */
class Column {
  private numbers: Float64Array | undefined;
  private other: unknown[] | undefined;
  length = 0;

  constructor(physical: number, rows: number) {
    if (physical === Physical.INT32 || physical === Physical.INT64 || physical === Physical.DOUBLE)
      this.numbers = new Float64Array(rows);
    else this.other = [];
  }

  push(v: number | bigint | string | boolean): void {
    const numbers = this.numbers;
    if (numbers !== undefined && typeof v === "number" && this.length < numbers.length) {
      numbers[this.length++] = v;
      return;
    }
    if (this.other === undefined) {
      this.other = Array.from(numbers!.subarray(0, this.length));
      this.numbers = undefined;
    }
    this.other.push(v);
    this.length++;
  }

  values(): ArrayLike<unknown> {
    return this.other ?? this.numbers!.subarray(0, this.length);
  }
}

/** Decode a page's `count` values; `pageAt` is the page's byte offset in the file (for errors). */
function decodePlain(
  page: Uint8Array,
  pageAt: number,
  count: number,
  physical: number,
  unsigned: boolean,
  out: Column,
): void {
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const need = (bytes: number) => {
    if (bytes > page.length) throw bad(pageAt, "a page shorter than its values");
  };
  switch (physical) {
    case Physical.INT32:
      need(4 * count);
      for (let i = 0; i < count; i++) out.push(view.getInt32(4 * i, true));
      return;
    case Physical.DOUBLE:
      need(8 * count);
      for (let i = 0; i < count; i++) out.push(view.getFloat64(8 * i, true));
      return;
    case Physical.INT64:
      need(8 * count);
      for (let i = 0; i < count; i++) {
        const lo = view.getUint32(8 * i, true);
        const hi = view.getUint32(8 * i + 4, true);
        if (hi < 0x200000) out.push(hi * 0x1_0000_0000 + lo);
        else if (unsigned) out.push(toBigInt(hi, lo));
        else if (hi >= 0xffe00000) out.push((hi | 0) * 0x1_0000_0000 + lo);
        else out.push(view.getBigInt64(8 * i, true));
      }
      return;
    case Physical.BOOLEAN:
      need(Math.ceil(count / 8));
      for (let i = 0; i < count; i++) out.push(((page[i >> 3]! >> (i & 7)) & 1) === 1);
      return;
    case Physical.BYTE_ARRAY: {
      let at = 0;
      for (let i = 0; i < count; i++) {
        need(at + 4);
        const len = view.getUint32(at, true);
        need(at + 4 + len);
        out.push(utf8(page, at + 4, len));
        at += 4 + len;
      }
      return;
    }
    default:
      throw bad(pageAt, `physical type ${physical} not read`);
  }
}

/**
 * A writer of Thrift's compact protocol, the encoding of Parquet's page headers and
 * footer: just the part of it those use. A struct is its fields, each a header byte
 * (the field id as a delta from the previous field's, and a type) and a value, ended
 * by a 0 byte; integers are zigzag varints; binaries and strings a varint length and
 * the bytes; a list a header (size and element type) and its elements, bare. A bool
 * field's value is its header's type (1 true, 2 false).
 *
 * Integers here are Numbers: the footer's i64s are sizes, offsets and counts, all
 * below 2^53 (|v| < 2^52 for the zigzag to stay exact).
 */
import { FileDiagnostic } from "../base/diagnostic.js";
import { ErrorCode } from "../base/errors.js";
import type { ByteBuf } from "./byte-buf.js";

/** Compact protocol types, as field headers and list headers give them. */
export const CType = {
  True: 1,
  False: 2,
  I8: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  Double: 7,
  Binary: 8,
  List: 9,
  Set: 10,
  Map: 11,
  Struct: 12,
} as const;

const encoder = new TextEncoder();

function zigzag(v: number): number {
  return v >= 0 ? 2 * v : -2 * v - 1;
}

export class CompactWriter {
  /** The id of the last field written in the struct being written. */
  private last = 0;
  /** The enclosing structs' last field ids. */
  private readonly outer: number[] = [];

  constructor(readonly out: ByteBuf) {}

  /** Start a struct that has no field header: the outermost one, or a list element. */
  begin(): void {
    this.outer.push(this.last);
    this.last = 0;
  }

  /** End the struct begun last (its stop byte). */
  end(): void {
    this.out.u8(0);
    this.last = this.outer.pop()!;
  }

  /** A struct field: begin it; {@link end} closes it. */
  struct(id: number): void {
    this.field(id, CType.Struct);
    this.begin();
  }

  /** A struct field with no fields of its own (Parquet's empty marker structs). */
  empty(id: number): void {
    this.struct(id);
    this.end();
  }

  i8(id: number, v: number): void {
    this.field(id, CType.I8);
    this.out.u8(v & 0xff);
  }

  /** An i32 field (Thrift enums are i32s too). */
  i32(id: number, v: number): void {
    this.field(id, CType.I32);
    this.out.varint(zigzag(v));
  }

  i64(id: number, v: number): void {
    this.field(id, CType.I64);
    this.out.varint(zigzag(v));
  }

  bool(id: number, v: boolean): void {
    this.field(id, v ? CType.True : CType.False);
  }

  binary(id: number, v: Uint8Array): void {
    this.field(id, CType.Binary);
    this.binaryElement(v);
  }

  string(id: number, v: string): void {
    this.binary(id, encoder.encode(v));
  }

  /** A list field's header: `size` elements of `type` follow (the *Element methods, or begin/end). */
  list(id: number, type: number, size: number): void {
    this.field(id, CType.List);
    if (size < 15) this.out.u8((size << 4) | type);
    else {
      this.out.u8(0xf0 | type);
      this.out.varint(size);
    }
  }

  i32Element(v: number): void {
    this.out.varint(zigzag(v));
  }

  binaryElement(v: Uint8Array): void {
    this.out.varint(v.length);
    this.out.append(v);
  }

  stringElement(v: string): void {
    this.binaryElement(encoder.encode(v));
  }

  private field(id: number, type: number): void {
    const delta = id - this.last;
    if (delta > 0 && delta <= 15) this.out.u8((delta << 4) | type);
    else {
      this.out.u8(type);
      this.out.varint(zigzag(id));
    }
    this.last = id;
  }
}

/** A struct read back: field id → value (numbers, Uint8Arrays, arrays, nested structs, booleans). */
export type CompactStruct = Map<number, CompactValue>;
export type CompactValue = number | boolean | Uint8Array | CompactStruct | CompactValue[];

/**
 * A reader of the compact protocol: whole structs into {@link CompactStruct}s (what
 * Parquet's footer and page headers need; no maps). Throws a {@link FileDiagnostic} at
 * the offending byte on bytes that are not a struct it can read (past the end, an
 * unknown type, nesting past 64 levels).
 */
export class CompactReader {
  constructor(
    private readonly bytes: Uint8Array,
    public at = 0,
  ) {}

  struct(depth = 0): CompactStruct {
    if (depth > 64) throw this.bad("structs nested too deep");
    const out: CompactStruct = new Map();
    let id = 0;
    for (;;) {
      const head = this.byte();
      if (head === 0) return out;
      const type = head & 0x0f;
      const delta = head >> 4;
      id = delta === 0 ? this.zigzag() : id + delta;
      out.set(id, type === CType.True ? true : type === CType.False ? false : this.value(type, depth));
    }
  }

  private value(type: number, depth: number): CompactValue {
    switch (type) {
      case CType.True:
        return true;
      case CType.False:
        return false;
      case CType.I8:
        return (this.byte() << 24) >> 24;
      case CType.I16:
      case CType.I32:
      case CType.I64:
        return this.zigzag();
      case CType.Double: {
        this.skip(8);
        return new DataView(this.bytes.buffer, this.bytes.byteOffset + this.at - 8, 8).getFloat64(0, true);
      }
      case CType.Binary: {
        const n = this.varint();
        const from = this.at;
        this.skip(n);
        return this.bytes.subarray(from, from + n);
      }
      case CType.List:
      case CType.Set: {
        const head = this.byte();
        const size = head >> 4 === 15 ? this.varint() : head >> 4;
        const element = head & 0x0f;
        const list: CompactValue[] = [];
        for (let i = 0; i < size; i++)
          list.push(element === CType.True ? this.byte() === 1 : this.value(element, depth + 1));
        return list;
      }
      case CType.Struct:
        return this.struct(depth + 1);
      default:
        throw this.bad(`unknown type ${type}`);
    }
  }

  /** The bytes cannot be read on at the current offset. */
  private bad(what: string): FileDiagnostic {
    return new FileDiagnostic(ErrorCode.BadFile, this.at, `thrift: ${what}`);
  }

  private byte(): number {
    if (this.at < 0 || this.at >= this.bytes.length) throw this.bad("ends early");
    return this.bytes[this.at++]!;
  }

  private skip(n: number): void {
    if (this.at < 0 || this.at + n > this.bytes.length) throw this.bad("ends early");
    this.at += n;
  }

  /** An unsigned varint, exact below 2^53. */
  private varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.byte();
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
    }
    throw this.bad("varint too long");
  }

  private zigzag(): number {
    const v = this.varint();
    return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
  }
}

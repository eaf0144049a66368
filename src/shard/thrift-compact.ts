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

/**
 * A bounds-checked reader over a byte range, for structures that are parsed once
 * (headers, feature sections, record fields): reading past the end yields zeros
 * and clears `ok` instead of throwing, so one check at the end suffices.
 */
import { cString, u32, u64, u64n } from "./bytes.js";

export class FieldCursor {
  ok = true;

  constructor(
    readonly b: Uint8Array,
    public pos: number,
    readonly end: number,
  ) {}

  private take(n: number): number {
    const at = this.pos;
    if (at + n > this.end) {
      this.ok = false;
      this.pos = this.end;
      return -1;
    }
    this.pos = at + n;
    return at;
  }

  get left(): number {
    return this.end - this.pos;
  }

  u8(): number {
    const at = this.take(1);
    return at < 0 ? 0 : this.b[at]!;
  }

  u16(): number {
    const at = this.take(2);
    return at < 0 ? 0 : this.b[at]! | (this.b[at + 1]! << 8);
  }

  u32(): number {
    const at = this.take(4);
    return at < 0 ? 0 : u32(this.b, at);
  }

  s32(): number {
    return this.u32() | 0;
  }

  /** A u64 as a Number (exact up to 2^53). */
  u64n(): number {
    const at = this.take(8);
    return at < 0 ? 0 : u64n(this.b, at);
  }

  /** A u64, exact. */
  u64(): bigint {
    const at = this.take(8);
    return at < 0 ? 0n : u64(this.b, at);
  }

  bytes(n: number): Uint8Array {
    const at = this.take(n);
    return at < 0 ? new Uint8Array(0) : this.b.subarray(at, at + n);
  }

  skip(n: number): void {
    this.take(n);
  }

  /** A NUL-terminated string filling a fixed field of `n` bytes. */
  fixedString(n: number): string {
    const at = this.take(n);
    return at < 0 ? "" : cString(this.b, at, at + n);
  }

  /** The NUL-terminated string that fills the rest of the range. */
  restString(): string {
    const s = cString(this.b, this.pos, this.end);
    this.pos = this.end;
    return s;
  }

  /** perf's feature string: u32 length (padding included), then the padded string. */
  lenString(): string {
    const n = this.u32();
    if (n > this.left) {
      this.ok = false;
      this.pos = this.end;
      return "";
    }
    return this.fixedString(n);
  }
}

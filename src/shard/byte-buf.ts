/**
 * A growable byte buffer written front to back: little-endian fixed-width numbers,
 * UTF-8 and LEB128 varints, doubling its capacity as it fills so that appends stay
 * amortised O(1). The analysis layer's ByteChunks streams text out in 64 KiB chunks
 * and never looks back; a Parquet file needs its numbers little-endian, lengths
 * patched in before the bytes they count, and the whole file in one array.
 */
import { putUtf8, putVarint } from "../analysis/export/byte-chunks.js";

export class ByteBuf {
  private buf: Uint8Array;
  private view: DataView;
  /** Bytes written so far. */
  length = 0;

  constructor(capacity = 1 << 16) {
    this.buf = new Uint8Array(Math.max(64, capacity));
    this.view = new DataView(this.buf.buffer);
  }

  /**
   * The backing array: its first {@link length} bytes are those written. For reading
   * back in place without a view per read; valid until the next write.
   */
  get data(): Uint8Array {
    return this.buf;
  }

  /** A view of the bytes written so far (valid until the next write). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  /** A copy of the bytes written so far, exactly as long as they are. */
  toArray(): Uint8Array {
    return this.buf.slice(0, this.length);
  }

  /** Forget everything written, keeping the capacity. */
  clear(): void {
    this.length = 0;
  }

  /** Make room for `n` more bytes. */
  reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.bytes());
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): void {
    if (this.length === this.buf.length) this.reserve(1);
    this.buf[this.length++] = v;
  }

  /** The low 32 bits of `v` (signed or unsigned), little-endian. */
  u32(v: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, v >>> 0, true);
    this.length += 4;
  }

  /** `v` at `at`, a place written before (a length known only after what it counts). */
  patchU32(at: number, v: number): void {
    this.view.setUint32(at, v >>> 0, true);
  }

  /** An IEEE 754 double, little-endian. */
  f64(v: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, v, true);
    this.length += 8;
  }

  append(src: Uint8Array): void {
    this.reserve(src.length);
    this.buf.set(src, this.length);
    this.length += src.length;
  }

  /**
   * `s` as UTF-8 (lone surrogates become U+FFFD, as TextEncoder writes them); returns
   * the number of bytes written.
   */
  utf8(s: string): number {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.reserve(3 * s.length);
    const start = this.length;
    this.length = putUtf8(this.buf, start, s);
    return this.length - start;
  }

  /** `v` (an integer, 0 <= v < 2^53) as an unsigned LEB128 varint: seven bits a byte, low first. */
  varint(v: number): void {
    this.reserve(8);
    this.length = putVarint(this.buf, this.length, v);
  }
}

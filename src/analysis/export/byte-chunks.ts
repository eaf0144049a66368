/**
 * Export output as UTF-8 bytes handed to a writer callback in chunks of about 64 KiB:
 * exports of millions of records never build one big string, the writer is not
 * called per record, and nothing is encoded twice. Hot writers put their pieces in
 * directly (bytes encoded once, ASCII text, decimal integers); the rest write text.
 * Each chunk is the callee's to keep: the writer never touches it again.
 */

import { mutableFields } from "../../base/halves.js";

/**
 * Where an export's chunks go (a file, a Blob's parts, a socket). Each chunk is the
 * callee's to keep, unless the callee is marked {@link immediate}.
 */
export type ChunkOut = ((chunk: Uint8Array) => void) & { readonly immediate?: boolean };

/**
 * `out`, marked as done with each chunk when it returns (it writes or copies the
 * bytes): writers then fill one buffer again and again instead of a new one per chunk
 * (0.93x of the CPU time for `ptkit perf -q --folded` on 27 MB of output).
 */
export function immediate(out: (chunk: Uint8Array) => void): ChunkOut {
  return Object.assign(out, { immediate: true });
}

const CHUNK = 1 << 16;
/** Lowercase hex digits' character codes. */
const HEX = new Uint8Array([...Array(16).keys()].map((d) => "0123456789abcdef".charCodeAt(d)));
/** Each byte's two hex digits as a little-endian Uint16 holds them: PAIRS[0xab] is "ab". */
const PAIRS = new Uint16Array(256).map((_, i) => HEX[i >> 4]! | (HEX[i & 15]! << 8));
const encoder = new TextEncoder();

/** `text` as UTF-8, for bytes written again and again (names, fixed parts of records). */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export class ByteChunks {
  private buf = new Uint8Array(CHUNK);
  /** {@link buf} as a DataView (see {@link view}). */
  private dv = new DataView(this.buf.buffer);
  private at = 0;
  /** The callee is done with a chunk when it returns: the buffer is filled again. */
  private readonly reuse: boolean;

  constructor(private readonly out: ChunkOut) {
    this.reuse = out.immediate === true;
    // Writers' loops run before the first chunk goes out.
    mutableFields(this, ["buf", "dv", "at"]);
  }

  /** Make room for `n` more bytes: the full part goes out first. */
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    if (this.at > 0) this.out(this.buf.subarray(0, this.at));
    if (!this.reuse || n > this.buf.length) this.fresh(Math.max(CHUNK, n));
    this.at = 0;
  }

  private fresh(size: number): void {
    this.buf = new Uint8Array(size);
    this.dv = new DataView(this.buf.buffer);
  }

  /** Any text (ASCII copied unit by unit, the rest encoded). */
  text(s: string): void {
    const n = s.length;
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.room(3 * n);
    this.at = putUtf8(this.buf, this.at, s);
    this.flushFull();
  }

  /**
   * `s` as a JSON string literal, as `JSON.stringify(s)` writes it: ASCII without
   * control characters, quotes or backslashes copied between the quotes unit by unit,
   * anything else by JSON.stringify (names are mostly plain: no string is made).
   */
  json(s: string): void {
    const n = s.length;
    if (this.at + n + 2 > this.buf.length) this.room(n + 2);
    const b = this.buf;
    let at = this.at;
    b[at++] = 0x22;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c >= 0x80 || c === 0x22 || c === 0x5c) {
        // (What was copied is written over.)
        this.text(JSON.stringify(s));
        return;
      }
      b[at++] = c;
    }
    b[at++] = 0x22;
    this.at = at;
  }

  /** Bytes made once (see {@link utf8}). */
  bytes(u: Uint8Array): void {
    const n = u.length;
    // A whole array needs no subarray for set(), which past ~24 bytes beats a loop of
    // any width (a 65-byte file name 25 ns against putView's 80, Node 20).
    if (n <= 24) {
      this.slice(u, 0, n);
      return;
    }
    if (this.at + n > this.buf.length) this.room(n);
    this.buf.set(u, this.at);
    this.at += n;
  }

  /** `length` bytes of `src` from `start` (names in an arena, see FrameNames). */
  slice(src: Uint8Array, start: number, length: number): void {
    if (this.at + length > this.buf.length) this.room(length);
    this.at = putBytes(this.buf, this.at, src, start, length);
  }

  /**
   * Room for `n` more bytes: where they go in {@link buffer} (writers of whole records
   * fill them in place, then say where they ended with {@link wrote}).
   */
  reserve(n: number): number {
    if (this.at + n > this.buf.length) this.room(n);
    return this.at;
  }

  /** Bytes that fit in {@link buffer} before it goes out (a writer filling it in place can stop short of that). */
  get free(): number {
    return this.buf.length - this.at;
  }

  /** The buffer {@link reserve} made room in (read it after reserving). */
  get buffer(): Uint8Array {
    return this.buf;
  }

  /** {@link buffer} as a DataView, for {@link putView} (read it after reserving). */
  get view(): DataView {
    return this.dv;
  }

  /** The bytes reserved were written up to `end` (at most the room reserved). */
  wrote(end: number): void {
    this.at = end;
  }

  /** Bytes made once, as a DataView (see {@link viewOf}). */
  viewBytes(src: DataView): void {
    const n = src.byteLength;
    const at = this.reserve(n);
    // After reserve, which may have replaced the buffer.
    this.at = putView(this.dv, at, src, 0, n);
  }

  /** One byte (an ASCII character code). */
  byte(c: number): void {
    if (this.at === this.buf.length) this.room(1);
    this.buf[this.at++] = c;
  }

  /** An integer as `String(v)` writes it (digits made here for 0 <= v < 2^53). */
  int(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && Number.isInteger(v))) {
      this.text(String(v));
      return;
    }
    if (this.at + 16 > this.buf.length) this.room(16);
    this.at = putDecimal(this.buf, this.at, v);
  }

  /**
   * The 64-bit value hi:lo (unsigned halves) in lowercase hex as the packet layer's
   * `hex64` writes it, at least `width` digits, padded on the left with `pad` ("0" or " ").
   */
  hex64(hi: number, lo: number, width: number, pad = 0x30): void {
    if (this.at + 16 + width > this.buf.length) this.room(16 + width);
    this.at =
      width === 16 ? putHex16(this.dv, this.at, hi, lo, pad) : putHex(this.buf, this.at, hi, lo, width, pad);
  }

  /**
   * `v` (an integer, 0 <= v < 2^53) as a protobuf base-128 varint: seven bits a byte,
   * low first, the top bit set on all but the last (see {@link varintSize}).
   */
  varint(v: number): void {
    if (this.at + 8 > this.buf.length) this.room(8);
    this.at = putVarint(this.buf, this.at, v);
  }

  /** The 64-bit value hi:lo (unsigned halves) as a varint (negative int64s: ten bytes). */
  varint64(hi: number, lo: number): void {
    if (this.at + 10 > this.buf.length) this.room(10);
    const b = this.buf;
    let at = this.at;
    hi >>>= 0;
    lo >>>= 0;
    while (hi !== 0 || lo >= 0x80) {
      b[at++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    b[at++] = lo;
    this.at = at;
  }

  /** Everything written so far goes out. */
  flush(): void {
    if (this.at === 0) return;
    this.out(this.buf.subarray(0, this.at));
    if (!this.reuse) this.fresh(CHUNK);
    this.at = 0;
  }

  /** A chunk's worth goes out as soon as it is there. */
  private flushFull(): void {
    if (this.at >= CHUNK) this.flush();
  }
}

/**
 * {@link ByteChunks.hex64} in 16 columns (perf's and ptxed's addresses) into `d` at
 * `at`, which has room for them: the padding four bytes a step, then the digits from
 * the right two a step (DataView stores: see {@link putView}). Where it ends. About 3x
 * faster than digit by digit after counting them (Node 20), and addresses are most of
 * `ptkit perf`'s branch and instruction lines.
 */
export function putHex16(d: DataView, at: number, hi: number, lo: number, pad: number): number {
  const pad4 = pad * 0x01010101;
  d.setInt32(at, pad4);
  d.setInt32(at + 4, pad4);
  d.setInt32(at + 8, pad4);
  d.setInt32(at + 12, pad4);
  const end = at + 16;
  let i = end;
  let v = lo >>> 0;
  if (hi !== 0) {
    for (let k = 0; k < 4; k++, v >>>= 8) {
      i -= 2;
      d.setUint16(i, PAIRS[v & 255]!, true);
    }
    v = hi >>> 0;
  }
  for (; v > 15; v >>>= 8) {
    i -= 2;
    d.setUint16(i, PAIRS[v & 255]!, true);
  }
  // An odd digit left, or the value is 0.
  if (v !== 0 || i === end) d.setUint8(i - 1, HEX[v]!);
  return end;
}

/**
 * {@link ByteChunks.hex64} into `b` at `at`, which has room for max(16, `width`) bytes:
 * at least `width` digits, `pad` on the left. Where it ends.
 */
export function putHex(
  b: Uint8Array,
  at: number,
  hi: number,
  lo: number,
  width: number,
  pad: number,
): number {
  // Digits from the highest set bit: 4 bits a digit, at least one.
  const digits = hi !== 0 ? 8 + ((35 - Math.clz32(hi)) >> 2) : lo === 0 ? 1 : (35 - Math.clz32(lo)) >> 2;
  for (let i = digits; i < width; i++) b[at++] = pad;
  const end = at + digits;
  // From the right, two digits a step (a byte of the value); an odd one last.
  let i = end;
  let v = lo >>> 0;
  if (hi !== 0) {
    for (let k = 0; k < 4; k++, v >>>= 8) {
      const p = PAIRS[v & 255]!;
      b[--i] = p >>> 8;
      b[--i] = p & 255;
    }
    v = hi >>> 0;
  }
  for (; v > 15; v >>>= 8) {
    const p = PAIRS[v & 255]!;
    b[--i] = p >>> 8;
    b[--i] = p & 255;
  }
  if (i > at) b[at] = HEX[v]!;
  return end;
}

/** `length` bytes of `src` from `start` into `b` at `at`, which has room for them: where they end. */
export function putBytes(b: Uint8Array, at: number, src: Uint8Array, start: number, length: number): number {
  // Names and record parts are short: a loop beats set()'s call overhead and
  // subarray()'s object (about 75 ns together, Node 20). Past 64 bytes set() wins:
  // a folded stacks' line (~150 bytes) is 250 ns by the loop, 80 ns by set().
  if (length > 64) b.set(src.subarray(start, start + length), at);
  else for (let i = 0; i < length; i++) b[at + i] = src[start + i]!;
  return at + length;
}

/**
 * {@link putBytes} between DataViews, four bytes a step: `length` bytes of `src` from
 * `start` into `out` at `at`, which has room for them; where they end. A store into a
 * Uint8Array makes V8 load both arrays' fields again before the next byte (they may
 * share memory), so the byte loop costs about 2 ns a byte (Node 20); a DataView moves
 * four unaligned bytes in one load and one store: 5 pieces of a timeline event (80
 * bytes) 85 ns instead of 200.
 */
export function putView(out: DataView, at: number, src: DataView, start: number, length: number): number {
  let i = 0;
  for (; i + 4 <= length; i += 4) out.setInt32(at + i, src.getInt32(start + i, true), true);
  for (; i < length; i++) out.setUint8(at + i, src.getUint8(start + i));
  return at + length;
}

/** Bytes made once (see {@link utf8}) as a DataView, for {@link putView}. */
export function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The integer `v` (0 <= v < 2^53) in decimal, as `String(v)` writes it, into `b` at `at`
 * (room for 16 bytes): where it ends. Below 10^8 in int32 arithmetic two digits a step
 * (a division by a constant is a multiply then); above, the digits over the last eight
 * first. (A double's division per digit took ~90 ns for a timeline's time.)
 */
export function putDecimal(b: Uint8Array, at: number, v: number): number {
  if (v < 10) {
    b[at] = 0x30 + v;
    return at + 1;
  }
  if (v < 1e8) return putDigits(b, at, v | 0, digitCount(v | 0));
  const hi = Math.floor(v / 1e8);
  const end = putDigits(b, at, hi | 0, digitCount(hi | 0));
  return putDigits(b, end, (v - hi * 1e8) | 0, 8);
}

/** Decimal digits of `v` (0 <= v < 10^8, int32), at least one. */
function digitCount(v: number): number {
  if (v < 10000) return v < 100 ? (v < 10 ? 1 : 2) : v < 1000 ? 3 : 4;
  return v < 1000000 ? (v < 100000 ? 5 : 6) : v < 10000000 ? 7 : 8;
}

/** `v` (0 <= v < 10^8, int32) in exactly `n` decimal digits (zeros before it) into `b` at `at`: where they end. */
function putDigits(b: Uint8Array, at: number, v: number, n: number): number {
  const end = at + n;
  let i = end;
  let x = v;
  while (i - at >= 2) {
    const q = (x / 100) | 0;
    const r = (x - q * 100) << 1;
    b[--i] = DIGIT_PAIRS[r + 1]!;
    b[--i] = DIGIT_PAIRS[r]!;
    x = q;
  }
  if (i > at) b[at] = 0x30 + x;
  return end;
}

/** The two digits of 0..99, as character codes: DIGIT_PAIRS[2k], DIGIT_PAIRS[2k + 1]. */
const DIGIT_PAIRS = Uint8Array.from(
  { length: 200 },
  (_, i) => 0x30 + (i & 1 ? (i >> 1) % 10 : Math.floor(i / 20)),
);

/** Bytes of {@link ByteChunks.varint}'s encoding of `v` (0 <= v < 2^53). */
export function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/**
 * `v` (an integer, 0 <= v < 2^53) as an unsigned base-128 varint (protobuf's, LEB128)
 * into `b` at `at`, which has room for 8 bytes: returns where it ends.
 */
export function putVarint(b: Uint8Array, at: number, v: number): number {
  // Division while v needs more than 31 bits (exact below 2^53), bit operations below.
  while (v >= 0x80000000) {
    b[at++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  while (v >= 0x80) {
    b[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  b[at++] = v;
  return at;
}

/**
 * Units from which TextEncoder encodes a whole string: below, its call costs more than
 * copying; above, it is up to 4 times faster (a line built by concatenation, whose
 * units a loop reads through the pieces, most of all).
 */
const ENCODE_FROM = 32;

/**
 * `s` as UTF-8 into `b` at `at`, which has room for 3 bytes per UTF-16 unit (lone
 * surrogates become U+FFFD, as TextEncoder writes them): returns where it ends. A short
 * string's ASCII is copied unit by unit; from the first other unit on, and for a long
 * string, TextEncoder encodes.
 */
export function putUtf8(b: Uint8Array, at: number, s: string): number {
  const n = s.length;
  if (n >= ENCODE_FROM) return at + encoder.encodeInto(s, b.subarray(at)).written;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return at + encoder.encodeInto(i === 0 ? s : s.slice(i), b.subarray(at)).written;
    b[at++] = c;
  }
  return at;
}

/**
 * Text collected as UTF-8 bytes: a decoding thread's output (a piece's listing)
 * held until it is its turn to be written. As bytes it costs the garbage collector
 * nothing to hold and nothing to pass to another thread (its buffers are
 * transferred). Bytes go into blocks that are never copied or grown.
 */
const encoder = new TextEncoder();

const BLOCK = 1 << 20;

export class TextBytes {
  private readonly done: Uint8Array[] = [];
  private block = new Uint8Array(0);
  private used = 0;

  append(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const need = text.length * 3;
    if (this.used + need > this.block.length) {
      if (this.used > 0) this.done.push(this.block.subarray(0, this.used));
      this.block = new Uint8Array(Math.max(BLOCK, need));
      this.used = 0;
    }
    this.used += encoder.encodeInto(text, this.block.subarray(this.used)).written;
  }

  /** Bytes so far. */
  get length(): number {
    let n = this.used;
    for (const d of this.done) n += d.length;
    return n;
  }

  /** The bytes [from, to) as one array. */
  slice(from: number, to: number): Uint8Array {
    const out = new Uint8Array(Math.max(0, to - from));
    let at = 0;
    for (const part of this.bytes()) {
      const a = Math.max(from - at, 0);
      const b = Math.min(to - at, part.length);
      if (a < b) out.set(part.subarray(a, b), at + a - from);
      at += part.length;
    }
    return out;
  }

  /** The bytes so far, in order (views of the blocks). */
  bytes(): Uint8Array[] {
    return this.used > 0 ? [...this.done, this.block.subarray(0, this.used)] : [...this.done];
  }
}

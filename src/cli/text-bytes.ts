/**
 * Text collected as UTF-8 bytes: a decoding thread's output (a piece's listing)
 * held until it is its turn to be written. As bytes it costs the garbage collector
 * nothing to hold and nothing to pass to another thread (its buffer is transferred).
 */
const encoder = new TextEncoder();

export class TextBytes {
  private buf = new Uint8Array(1 << 16);
  private length = 0;

  append(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const need = this.length + text.length * 3;
    if (need > this.buf.length) {
      const grown = new Uint8Array(Math.max(need, this.buf.length * 2));
      grown.set(this.buf.subarray(0, this.length));
      this.buf = grown;
    }
    this.length += encoder.encodeInto(text, this.buf.subarray(this.length)).written;
  }

  /** The bytes so far (a view of the buffer, which may be larger). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

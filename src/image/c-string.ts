/**
 * Strings stored NUL-terminated in binary files (ELF string tables, perf.data
 * records), read as UTF-8, which is how tools print them.
 */

const utf8 = new TextDecoder();

/** The index of the first NUL in b[p, end), or `end` when there is none. */
export function nulAt(b: Uint8Array, p: number, end: number): number {
  let q = p;
  while (q < end && b[q] !== 0) q++;
  return q;
}

/** b[p, q) as UTF-8 (ASCII, nearly always, is taken character by character). */
export function utf8Text(b: Uint8Array, p: number, q: number): string {
  let s = "";
  for (let i = p; i < q; i++) {
    const c = b[i]!;
    if (c >= 0x80) return s + utf8.decode(b.subarray(i, q));
    s += String.fromCharCode(c);
  }
  return s;
}

/** The NUL-terminated string in b[p, end) (the whole range when there is no NUL). */
export function cString(b: Uint8Array, p: number, end: number): string {
  return utf8Text(b, p, nulAt(b, p, end));
}

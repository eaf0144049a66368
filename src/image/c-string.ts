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

/**
 * Below this many characters a string is made character by character: V8 keeps
 * such strings flat (ConsString::kMinLength is 13).
 */
const SHORT = 13;

/**
 * b[p, q) as UTF-8: a short string character by character, a longer one's ASCII part
 * by the decoder at once, and whatever follows its first byte past ASCII decoded as
 * UTF-8 (invalid sequences become U+FFFD). Not character by character: from there V8
 * makes each `+=` a node of a rope the string keeps until it is read, and an ELF
 * file's symbol names (node's 153k, 73 characters on average) were 11 million nodes,
 * whose garbage collection took most of two seconds.
 */
export function utf8Text(b: Uint8Array, p: number, q: number): string {
  if (q - p < SHORT) {
    let s = "";
    for (let i = p; i < q; i++) {
      const c = b[i]!;
      if (c >= 0x80) return s + utf8.decode(b.subarray(i, q));
      s += String.fromCharCode(c);
    }
    return s;
  }
  let i = p;
  while (i < q && b[i]! < 0x80) i++;
  const ascii = i === p ? "" : utf8.decode(b.subarray(p, i));
  return i === q ? ascii : ascii + utf8.decode(b.subarray(i, q));
}

/** The NUL-terminated string in b[p, end) (the whole range when there is no NUL). */
export function cString(b: Uint8Array, p: number, end: number): string {
  return utf8Text(b, p, nulAt(b, p, end));
}

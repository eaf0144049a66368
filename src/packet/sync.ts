/**
 * Synchronisation: finding a PSB from any offset, forwards or backwards.
 *
 * Like libipt, the search looks at 8-byte-aligned windows (aligned relative to the
 * start of the buffer) holding the repeating 02 82 pattern, then takes the last 16
 * bytes of that run of pattern bytes as the PSB. Any whole PSB contains such a window.
 */

import { ErrorCode } from "../base/errors.js";
import { PSB_SIZE } from "./decode.js";
import type { TraceBytes } from "./trace-bytes.js";

function isPatternWindow(buf: Uint8Array, p: number): boolean {
  const a = buf[p]!;
  const b = buf[p + 1]!;
  if (!((a === 0x02 && b === 0x82) || (a === 0x82 && b === 0x02))) return false;
  for (let i = 2; i < 8; i += 2) {
    if (buf[p + i] !== a || buf[p + i + 1] !== b) return false;
  }
  return true;
}

/** Whether a whole PSB starts at `p` (and ends before `end`). */
export function isPsbAt(buf: Uint8Array, p: number, end: number): boolean {
  if (p < 0 || p + PSB_SIZE > end) return false;
  for (let i = 0; i < PSB_SIZE; i += 2) {
    if (buf[p + i] !== 0x02 || buf[p + i + 1] !== 0x82) return false;
  }
  return true;
}

/** From a pattern window at `p`, the start of the PSB that ends its run, or -1. */
function psbOfWindow(buf: Uint8Array, p: number, end: number): number {
  if (buf[p] !== 0x02) p++;
  while (p + 1 < end && buf[p] === 0x02 && buf[p + 1] === 0x82) p += 2;
  p -= PSB_SIZE;
  return isPsbAt(buf, p, end) ? p : -1;
}

/**
 * The offset of the first PSB at or after `from`, or `-Eos`. Searches `buf[0, end)`.
 */
export function syncForward(buf: Uint8Array, from: number, end: number = buf.length): number {
  if (from < 0 || from > end) return -ErrorCode.Internal;
  for (let p = (from + 7) & ~7; p + 8 <= end; p += 8) {
    if (!isPatternWindow(buf, p)) continue;
    const psb = psbOfWindow(buf, p, end);
    if (psb >= from) return psb;
  }
  return -ErrorCode.Eos;
}

/**
 * The offset of the last PSB that starts before `from`, or `-Eos`.
 */
export function syncBackward(buf: Uint8Array, from: number, end: number = buf.length): number {
  if (from < 0 || from > end) return -ErrorCode.Internal;
  for (let p = (from & ~7) - 8; p >= 0; p -= 8) {
    if (!isPatternWindow(buf, p)) continue;
    const psb = psbOfWindow(buf, p, end);
    if (psb >= 0 && psb < from) return psb;
    // Every window of this run maps to the same PSB: skip the rest of the run (keeps this linear).
    while (p >= 8 && isPatternWindow(buf, p - 8) && buf[p - 8] === buf[p]) p -= 8;
  }
  return -ErrorCode.Eos;
}

/**
 * {@link syncForward} over a trace read a window at a time: the trace offset of the
 * first PSB at or after trace offset `from`, or `-Eos`. Reads on until the answer
 * cannot change with the bytes after the window (a PSB's run of pattern bytes may go
 * on past it), dropping the bytes searched on the way.
 */
export function syncForwardIn(t: TraceBytes, from: number): number {
  for (;;) {
    const base = t.base;
    const end = t.end;
    const at = Math.max(from, base);
    const local = syncForward(t.buf, Math.min(at, end) - base, end - base);
    if (local >= 0 && (local + base + PSB_SIZE + 1 < end || !t.more)) return local + base;
    if (local < 0 && (local !== -ErrorCode.Eos || !t.more)) return local;
    // None yet: a PSB at or after `from` can only be one whose run reaches into the last PSB's worth of bytes.
    if (local < 0) from = Math.max(from, end - PSB_SIZE);
    t.release(from);
    if (!t.grow()) return local < 0 ? local : local + base;
  }
}

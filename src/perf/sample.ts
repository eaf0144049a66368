/**
 * The fields of a PERF_RECORD_SAMPLE past its leading ones (see sample-id.ts): the
 * READ values (skipped, laid out by the event's read_format) and the CALLCHAIN
 * (kept), in the order include/uapi/linux/perf_event.h gives them. What comes after
 * the callchain (RAW, BRANCH_STACK, registers, ...) is not read.
 */
import type { PerfEventAttr } from "./attr.js";
import { u32, u64n } from "./bytes.js";
import { FIELD_BITS } from "./sample-id.js";
import { SampleType } from "./types.js";

/** perf_event_attr.read_format bits (PERF_FORMAT_*). */
export const ReadFormat = {
  TotalTimeEnabled: 1 << 0,
  TotalTimeRunning: 1 << 1,
  Id: 1 << 2,
  Group: 1 << 3,
  Lost: 1 << 4,
} as const;

/** The leading fields of a SAMPLE, in record order (8 bytes each): what sample-id.ts reads. */
const HEAD_BITS = SampleType.Identifier | FIELD_BITS;

/**
 * Callchain entries at or above this (as u64) are PERF_CONTEXT_* markers (kernel,
 * user, guest, ...), not addresses: perf's PERF_CONTEXT_MAX is -4095.
 */
export const CONTEXT_MARKER_LO = 0xfffff001;

/** A sample's callchain, reused from sample to sample (it grows, never shrinks). */
export class SampleChain {
  /** Entries as 32-bit halves, markers included; `length` of them are valid. */
  hi = new Uint32Array(16);
  lo = new Uint32Array(16);
  length = 0;

  /** Whether entry i is a PERF_CONTEXT_* marker. */
  isMarker(i: number): boolean {
    return this.hi[i] === 0xffffffff && this.lo[i]! >= CONTEXT_MARKER_LO;
  }

  private reserve(n: number): void {
    if (n <= this.hi.length) return;
    let size = this.hi.length;
    while (size < n) size *= 2;
    this.hi = new Uint32Array(size);
    this.lo = new Uint32Array(size);
  }

  /** Read `n` entries from `b[p]`. */
  read(b: Uint8Array, p: number, n: number): void {
    this.reserve(n);
    for (let i = 0; i < n; i++, p += 8) {
      this.lo[i] = u32(b, p);
      this.hi[i] = u32(b, p + 4);
    }
    this.length = n;
  }
}

/**
 * Read the callchain of the SAMPLE record body `b[start, end)` of an event with
 * attributes `attr` into `chain` (length 0 when the event samples none). Returns
 * what is wrong when the fields do not fit the record (`chain` is then empty).
 */
export function parseSampleChain(
  b: Uint8Array,
  start: number,
  end: number,
  attr: PerfEventAttr,
  chain: SampleChain,
): string | undefined {
  chain.length = 0;
  const type = attr.sampleType;
  let p = start;
  for (let bits = type & HEAD_BITS; bits !== 0; bits &= bits - 1) p += 8;
  if (type & SampleType.Read) {
    const f = attr.readFormat;
    const times = (f & ReadFormat.TotalTimeEnabled ? 8 : 0) + (f & ReadFormat.TotalTimeRunning ? 8 : 0);
    const perValue = 8 + (f & ReadFormat.Id ? 8 : 0) + (f & ReadFormat.Lost ? 8 : 0);
    if (f & ReadFormat.Group) {
      if (p + 8 > end) return `its ${end - start} bytes end before the READ group's count`;
      const nr = u64n(b, p);
      // (A hostile count must not overflow the offset: compare in counts, not bytes.)
      if (nr > (end - p - 8 - times) / perValue) return `its READ group of ${nr} values runs past its end`;
      p += 8 + times + nr * perValue;
    } else p += times + perValue;
  }
  if (p > end)
    return `its ${end - start} bytes are too few for the fields its sample_type 0x${type.toString(16)} has`;
  if (!(type & SampleType.Callchain)) return undefined;
  if (p + 8 > end) return `its ${end - start} bytes end before the callchain's count`;
  const nr = u64n(b, p);
  if (nr > (end - p - 8) / 8) return `its callchain of ${nr} entries runs past its end`;
  chain.read(b, p + 8, nr);
  return undefined;
}

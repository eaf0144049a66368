/**
 * The sample_id fields (pid/tid, time, id, stream id, cpu) of a record: the
 * trailer of non-SAMPLE records when sample_id_all is set, and the leading fields
 * of SAMPLE records. One reusable object, filled without allocating.
 */
import { sampleIdSize } from "./attr.js";
import { u32, u64n } from "./bytes.js";
import { SampleType } from "./types.js";

export class SampleId {
  /** Whether the record carries sample_id fields at all. */
  present = false;
  /** Whether they come from a SAMPLE record (which has ip, addr and period too). */
  fromSample = false;
  /** PERF_SAMPLE_* bits saying which fields below are set. */
  sampleType = 0;
  /** Index of the event (attribute) the record belongs to, or -1. */
  event = -1;
  pid = -1;
  tid = -1;
  /** perf time (ns) as 32-bit halves. */
  timeHi = 0;
  timeLo = 0;
  id = 0;
  streamId = 0;
  cpu = -1;
  /** SAMPLE only: the sampled IP as halves, and the period. */
  ipHi = 0;
  ipLo = 0;
  addrHi = 0;
  addrLo = 0;
  period = 0;

  clear(): this {
    this.present = this.fromSample = false;
    this.sampleType = 0;
    this.event = -1;
    this.pid = this.tid = this.cpu = -1;
    this.timeHi = this.timeLo = this.id = this.streamId = 0;
    this.ipHi = this.ipLo = this.addrHi = this.addrLo = this.period = 0;
    return this;
  }

  /** perf time in ns as a Number (exact below 2^53 ns, i.e. 104 days of uptime). */
  get time(): number {
    return this.timeHi * 0x100000000 + this.timeLo;
  }
}

/** The fields both forms share, in the order a SAMPLE record has them (8 bytes each). */
export const FIELD_BITS =
  SampleType.Ip |
  SampleType.Tid |
  SampleType.Time |
  SampleType.Addr |
  SampleType.Id |
  SampleType.StreamId |
  SampleType.Cpu |
  SampleType.Period;

/** The sample_id_all trailer has no IP, ADDR or PERIOD (and IDENTIFIER comes last). */
const TRAILER_BITS = SampleType.Tid | SampleType.Time | SampleType.Id | SampleType.StreamId | SampleType.Cpu;

/**
 * Fill `out` from the sample_id trailer that ends at `end` in `b` (record body
 * starting at `start`), laid out per `sampleType`. False when it does not fit.
 */
export function parseTrailer(
  b: Uint8Array,
  start: number,
  end: number,
  sampleType: number,
  out: SampleId,
): boolean {
  const p = end - sampleIdSize(sampleType);
  if (p < start) return false;
  out.present = true;
  out.sampleType = sampleType;
  const q = readFields(b, p, sampleType & TRAILER_BITS, out);
  if (sampleType & SampleType.Identifier) out.id = u64n(b, q);
  return true;
}

/**
 * Fill `out` from the leading fields of a SAMPLE record body `b[start, end)`:
 * IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD (the rest is left
 * undecoded). False when they do not fit.
 */
export function parseSampleHead(
  b: Uint8Array,
  start: number,
  end: number,
  sampleType: number,
  out: SampleId,
): boolean {
  const fields = sampleType & (FIELD_BITS | SampleType.Identifier);
  let need = 0;
  for (let bits = fields; bits !== 0; bits &= bits - 1) need += 8;
  if (start + need > end) return false;
  out.present = out.fromSample = true;
  out.sampleType = sampleType;
  let p = start;
  if (sampleType & SampleType.Identifier) {
    out.id = u64n(b, p);
    p += 8;
  }
  readFields(b, p, sampleType & FIELD_BITS, out);
  return true;
}

/** Read the fields `bits` selects, in SAMPLE order, from `b[p]` into `out`; the end offset. */
function readFields(b: Uint8Array, p: number, bits: number, out: SampleId): number {
  if (bits & SampleType.Ip) {
    out.ipLo = u32(b, p);
    out.ipHi = u32(b, p + 4);
    p += 8;
  }
  if (bits & SampleType.Tid) {
    out.pid = u32(b, p) | 0;
    out.tid = u32(b, p + 4) | 0;
    p += 8;
  }
  if (bits & SampleType.Time) {
    out.timeLo = u32(b, p);
    out.timeHi = u32(b, p + 4);
    p += 8;
  }
  if (bits & SampleType.Addr) {
    out.addrLo = u32(b, p);
    out.addrHi = u32(b, p + 4);
    p += 8;
  }
  if (bits & SampleType.Id) {
    out.id = u64n(b, p);
    p += 8;
  }
  if (bits & SampleType.StreamId) {
    out.streamId = u64n(b, p);
    p += 8;
  }
  if (bits & SampleType.Cpu) {
    out.cpu = u32(b, p) | 0;
    p += 8;
  }
  if (bits & SampleType.Period) {
    out.period = u64n(b, p);
    p += 8;
  }
  return p;
}

/**
 * Where the event id sits, so that a record can be matched to its event before its
 * layout is known (perf requires every event to put it in the same place): bytes
 * from the body start for SAMPLE, from the body end for the trailer; -1 when the
 * sample type has no id.
 */
export function idPositions(sampleType: number): { sample: number; trailer: number } {
  if (sampleType & SampleType.Identifier) return { sample: 0, trailer: 8 };
  if (!(sampleType & SampleType.Id)) return { sample: -1, trailer: -1 };
  let sample = 0;
  for (const bit of [SampleType.Ip, SampleType.Tid, SampleType.Time, SampleType.Addr]) {
    if (sampleType & bit) sample += 8;
  }
  let trailer = 8;
  for (const bit of [SampleType.StreamId, SampleType.Cpu]) if (sampleType & bit) trailer += 8;
  return { sample, trailer };
}

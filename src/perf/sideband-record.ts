/**
 * One record of a libipt pevent sideband stream (perf_event records without a file
 * header, as libipt's tools and DynamoRIO keep them), read with libipt's rules: the
 * sample_id fields follow the record's own fields in the order PERF_SAMPLE_* gives,
 * the record must be exactly as long as those fields, a record of type 0 or one cut
 * off by the end of the stream ends it, and perf time 0 means TSC 0. Sideband is a
 * record at a time, not a hot path: 64-bit values are BigInts.
 */
import { ErrorCode } from "../packet/index.js";
import { TRAILER_BITS } from "./attr.js";
import { cString, u16, u32, u64 } from "./bytes.js";
import { FIELD_BYTES, RECORD_LAYOUTS, type RecordLayout } from "./record-layout.js";
import { perfTimeToTsc, type TscConversion } from "./time-conv.js";
import { RecordType, SampleType } from "./types.js";

/** The sample_id fields a record carries (absent ones are undefined). */
export interface PeventSamples {
  pid?: number;
  tid?: number;
  /** perf time, as recorded. */
  time?: bigint;
  id?: bigint;
  streamId?: bigint;
  cpu?: number;
  identifier?: bigint;
}

/** The decoded record; `fields` holds the record's own fields by name (see {@link readPevent}). */
export interface PeventRecord {
  type: number;
  misc: number;
  size: number;
  fields: Record<string, number | bigint | string>;
  samples: PeventSamples;
  /** The TSC of `samples.time` (0 without a time). */
  tsc: bigint;
}

const HEADER_SIZE = 8;

/** The samples that are one u64 each, by PERF_SAMPLE_* bit. */
const U64_SAMPLES = {
  [SampleType.Id]: "id",
  [SampleType.StreamId]: "streamId",
  [SampleType.Identifier]: "identifier",
} as const;

/** The layout of a record type as libipt knows it: only those up to SWITCH_CPU_WIDE. */
export function peventLayout(type: number): RecordLayout | undefined {
  return type <= RecordType.SwitchCpuWide ? RECORD_LAYOUTS[type] : undefined;
}

/**
 * Read the record at `b[p]` (the stream ends at `end`), its samples laid out per
 * `sampleType` and its time converted with `conv`. With `byIdentifier`
 * (--pevent:sample-config), a record whose last 8 bytes are an identifier listed
 * there has that sample type instead (it must include PERF_SAMPLE_IDENTIFIER).
 * Returns the record, or a negative ErrorCode: -Eos at the end of the stream,
 * -NoSync for a record whose size does not match its fields, -BadPacket for a string
 * without its NUL, -BadConfig for a time that `conv` cannot convert or a bad
 * sample-config entry.
 */
export function readPevent(
  b: Uint8Array,
  p: number,
  end: number,
  sampleType: number,
  conv: TscConversion,
  byIdentifier?: ReadonlyMap<bigint, number>,
): PeventRecord | number {
  if (end - p < HEADER_SIZE) return -ErrorCode.Eos;
  const type = u32(b, p);
  const misc = u16(b, p + 4);
  const size = u16(b, p + 6);
  if (size < HEADER_SIZE) return -ErrorCode.NoSync;
  if (type === 0 || end - p < size) return -ErrorCode.Eos;
  const recEnd = p + size;
  const rec: PeventRecord = { type, misc, size, fields: {}, samples: {}, tsc: 0n };
  const fixed = peventLayout(type);
  // libipt reads neither fields nor samples of other records.
  if (!fixed) return rec;
  let q = p + HEADER_SIZE;
  // libipt's structures hold every field unsigned, 64-bit ones exact.
  for (const [name, kind] of fixed.fields) {
    const n = FIELD_BYTES[kind];
    if (q + n > recEnd) return -ErrorCode.NoSync;
    rec.fields[name] = n === 8 ? u64(b, q) : n === 4 ? u32(b, q) : u16(b, q);
    q += n;
  }
  const stringField = fixed.string;
  if (stringField) {
    let nul = q;
    while (nul < recEnd && b[nul] !== 0) nul++;
    if (nul >= recEnd) return -ErrorCode.BadPacket;
    rec.fields[stringField] = cString(b, q, recEnd);
    q += (nul - q + 1 + 7) & ~7;
  }
  let layout = sampleType;
  if (byIdentifier && recEnd - q >= 8) {
    const configured = byIdentifier.get(u64(b, recEnd - 8));
    if (configured !== undefined) {
      if (!(configured & SampleType.Identifier)) return -ErrorCode.BadConfig;
      layout = configured;
    }
  }
  const status = readSamples(b, q, recEnd, layout, conv, rec);
  if (status < 0) return status;
  return status === recEnd ? rec : -ErrorCode.NoSync;
}

/** Fill `rec.samples` (and `rec.tsc`) from b[p..]: the position after them, or -error. */
function readSamples(
  b: Uint8Array,
  p: number,
  end: number,
  sampleType: number,
  conv: TscConversion,
  rec: PeventRecord,
): number {
  const s = rec.samples;
  for (const bit of TRAILER_BITS) {
    if (!(sampleType & bit)) continue;
    if (p + 8 > end) return -ErrorCode.NoSync;
    switch (bit) {
      case SampleType.Tid:
        s.pid = u32(b, p);
        s.tid = u32(b, p + 4);
        break;
      case SampleType.Time:
        s.time = u64(b, p);
        // libipt converts the time as it reads it, before it knows that the rest fits.
        if (s.time !== 0n) {
          const tsc = perfTimeToTsc(s.time, conv);
          if (tsc === undefined) return -ErrorCode.BadConfig;
          rec.tsc = tsc;
        }
        break;
      case SampleType.Cpu:
        s.cpu = u32(b, p);
        break;
      default:
        s[U64_SAMPLES[bit]] = u64(b, p);
    }
    p += 8;
  }
  return p;
}

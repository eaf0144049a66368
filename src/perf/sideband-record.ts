/**
 * One record of a libipt pevent sideband stream (perf_event records without a file
 * header, as libipt's tools and DynamoRIO keep them), read with libipt's rules: the
 * sample_id fields follow the record's own fields in the order PERF_SAMPLE_* gives,
 * the record must be exactly as long as those fields, a record of type 0 or one cut
 * off by the end of the stream ends it, and perf time 0 means TSC 0. Sideband is a
 * record at a time, not a hot path: 64-bit values are BigInts.
 */
import { ErrorCode } from "../packet/index.js";
import { cString, u16, u32, u64 } from "./bytes.js";
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

/** Fixed field layouts: [name, kind], in record order. */
type Kind = "u32" | "u64";
const LAYOUTS: Record<number, ReadonlyArray<readonly [string, Kind]>> = {
  [RecordType.Mmap]: [
    ["pid", "u32"],
    ["tid", "u32"],
    ["addr", "u64"],
    ["len", "u64"],
    ["pgoff", "u64"],
  ],
  [RecordType.Mmap2]: [
    ["pid", "u32"],
    ["tid", "u32"],
    ["addr", "u64"],
    ["len", "u64"],
    ["pgoff", "u64"],
    ["maj", "u32"],
    ["min", "u32"],
    ["ino", "u64"],
    ["inoGeneration", "u64"],
    ["prot", "u32"],
    ["flags", "u32"],
  ],
  [RecordType.Lost]: [
    ["id", "u64"],
    ["lost", "u64"],
  ],
  [RecordType.Comm]: [
    ["pid", "u32"],
    ["tid", "u32"],
  ],
  [RecordType.Exit]: [
    ["pid", "u32"],
    ["ppid", "u32"],
    ["tid", "u32"],
    ["ptid", "u32"],
    ["time", "u64"],
  ],
  [RecordType.Throttle]: [
    ["time", "u64"],
    ["id", "u64"],
    ["streamId", "u64"],
  ],
  [RecordType.Aux]: [
    ["auxOffset", "u64"],
    ["auxSize", "u64"],
    ["flags", "u64"],
  ],
  [RecordType.ItraceStart]: [
    ["pid", "u32"],
    ["tid", "u32"],
  ],
  [RecordType.LostSamples]: [["lost", "u64"]],
  [RecordType.Switch]: [],
  [RecordType.SwitchCpuWide]: [
    ["nextPrevPid", "u32"],
    ["nextPrevTid", "u32"],
  ],
};
LAYOUTS[RecordType.Fork] = LAYOUTS[RecordType.Exit]!;
LAYOUTS[RecordType.Unthrottle] = LAYOUTS[RecordType.Throttle]!;

/** Records whose fixed fields end in a NUL-terminated string padded to 8 bytes. */
const STRING_FIELD: Record<number, string> = {
  [RecordType.Mmap]: "filename",
  [RecordType.Mmap2]: "filename",
  [RecordType.Comm]: "comm",
};

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
  const fields = LAYOUTS[type];
  // libipt reads neither fields nor samples of other records.
  if (!fields) return rec;
  let q = p + HEADER_SIZE;
  for (const [name, kind] of fields) {
    const n = kind === "u64" ? 8 : 4;
    if (q + n > recEnd) return -ErrorCode.NoSync;
    rec.fields[name] = kind === "u64" ? u64(b, q) : u32(b, q);
    q += n;
  }
  const stringField = STRING_FIELD[type];
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
  const field = (bytes: number): number => {
    const at = p;
    p += bytes;
    return at;
  };
  const fits = () => p <= end;
  if (sampleType & SampleType.Tid) {
    const at = field(8);
    if (!fits()) return -ErrorCode.NoSync;
    s.pid = u32(b, at);
    s.tid = u32(b, at + 4);
  }
  if (sampleType & SampleType.Time) {
    const at = field(8);
    if (!fits()) return -ErrorCode.NoSync;
    s.time = u64(b, at);
    if (s.time !== 0n) {
      const tsc = perfTimeToTsc(s.time, conv);
      if (tsc === undefined) return -ErrorCode.BadConfig;
      rec.tsc = tsc;
    }
  }
  for (const [bit, name] of [
    [SampleType.Id, "id"],
    [SampleType.StreamId, "streamId"],
    [SampleType.Cpu, "cpu"],
    [SampleType.Identifier, "identifier"],
  ] as const) {
    if (!(sampleType & bit)) continue;
    const at = field(8);
    if (!fits()) return -ErrorCode.NoSync;
    if (name === "cpu") s.cpu = u32(b, at);
    else s[name] = u64(b, at);
  }
  return p;
}

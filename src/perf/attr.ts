/**
 * struct perf_event_attr (include/uapi/linux/perf_event.h), every size from the
 * original 64 bytes (PERF_ATTR_SIZE_VER0) on: fields past the recorded size are 0.
 */
import { u16, u32, u64 } from "./bytes.js";
import { SampleType } from "./types.js";

/** The attribute flag bits of the u64 at offset 40, by name, in bit order. */
const FLAG_BITS: readonly string[] = [
  "disabled",
  "inherit",
  "pinned",
  "exclusive",
  "exclude_user",
  "exclude_kernel",
  "exclude_hv",
  "exclude_idle",
  "mmap",
  "comm",
  "freq",
  "inherit_stat",
  "enable_on_exec",
  "task",
  "watermark",
  "precise_ip", // two bits, 15-16
  "",
  "mmap_data",
  "sample_id_all",
  "exclude_host",
  "exclude_guest",
  "exclude_callchain_kernel",
  "exclude_callchain_user",
  "mmap2",
  "comm_exec",
  "use_clockid",
  "context_switch",
  "write_backward",
  "namespaces",
  "ksymbol",
  "bpf_event",
  "aux_output",
  "cgroup",
  "text_poke",
  "build_id",
  "inherit_thread",
  "remove_on_exec",
  "sigtrap",
];

/** The smallest perf_event_attr there ever was. */
export const ATTR_SIZE_VER0 = 64;

/** One event's attributes, as recorded. */
export interface PerfEventAttr {
  /** PERF_TYPE_* or a dynamic PMU type (intel_pt's comes from the pmu_mappings feature). */
  type: number;
  size: number;
  config: bigint;
  /** sample_period, or sample_freq when `freq` is set. */
  samplePeriod: bigint;
  /** PERF_SAMPLE_* bits (the kernel defines none above bit 31). */
  sampleType: number;
  readFormat: number;
  /** The flag word, exact. */
  flags: bigint;
  /** The set flags by name (`precise_ip=N` when non-zero). */
  flagNames: string[];
  sampleIdAll: boolean;
  wakeupEvents: number;
  bpType: number;
  config1: bigint;
  config2: bigint;
  branchSampleType: bigint;
  clockid: number;
  auxWatermark: number;
  sampleMaxStack: number;
  auxSampleSize: number;
  config3: bigint;
}

/**
 * Parse a perf_event_attr from `b[p, p + avail)`; its own `size` field says how
 * much of that it uses (0 means VER0). Returns undefined when fewer than 64 bytes
 * are there.
 */
export function parseAttr(b: Uint8Array, p: number, avail: number): PerfEventAttr | undefined {
  if (avail < ATTR_SIZE_VER0) return undefined;
  const recorded = u32(b, p + 4);
  const size = Math.min(recorded === 0 ? ATTR_SIZE_VER0 : recorded, avail);
  const at64 = (off: number) => (off + 8 <= size ? u64(b, p + off) : 0n);
  const at32 = (off: number) => (off + 4 <= size ? u32(b, p + off) : 0);
  const flags = u64(b, p + 40);
  const flagNames: string[] = [];
  FLAG_BITS.forEach((name, bit) => {
    if (name === "" || name === "precise_ip") return;
    if ((flags >> BigInt(bit)) & 1n) flagNames.push(name);
  });
  const precise = Number((flags >> 15n) & 3n);
  if (precise) flagNames.push(`precise_ip=${precise}`);
  return {
    type: u32(b, p),
    size: recorded,
    config: u64(b, p + 8),
    samplePeriod: u64(b, p + 16),
    sampleType: u32(b, p + 24),
    readFormat: u32(b, p + 32),
    flags,
    flagNames,
    sampleIdAll: ((flags >> 18n) & 1n) === 1n,
    wakeupEvents: u32(b, p + 48),
    bpType: u32(b, p + 52),
    config1: u64(b, p + 56),
    config2: at64(64),
    branchSampleType: at64(72),
    clockid: at32(92) | 0,
    auxWatermark: at32(104),
    sampleMaxStack: 110 <= size ? u16(b, p + 108) : 0,
    auxSampleSize: at32(112),
    config3: at64(128),
  };
}

/**
 * The attributes assumed for a stream that records none (libipt's pevent sideband:
 * the records' sample_id fields are laid out by `sampleType`, given by the user).
 */
export function sidebandAttr(sampleType: number): PerfEventAttr {
  return {
    type: 0,
    size: 0,
    config: 0n,
    samplePeriod: 0n,
    sampleType,
    readFormat: 0,
    flags: 1n << 18n,
    flagNames: ["sample_id_all"],
    sampleIdAll: true,
    wakeupEvents: 0,
    bpType: 0,
    config1: 0n,
    config2: 0n,
    branchSampleType: 0n,
    clockid: 0,
    auxWatermark: 0,
    sampleMaxStack: 0,
    auxSampleSize: 0,
    config3: 0n,
  };
}

/** An event: its attributes and the sample ids the kernel gave its instances. */
export interface PerfEvent {
  attr: PerfEventAttr;
  /** The ids (Numbers: the kernel hands out small ones). */
  ids: number[];
  /** Its name, from the event_desc feature when present. */
  name?: string;
}

/** The sample_id trailer's fields, in file order, 8 bytes each. */
export const TRAILER_BITS = [
  SampleType.Tid,
  SampleType.Time,
  SampleType.Id,
  SampleType.StreamId,
  SampleType.Cpu,
  SampleType.Identifier,
] as const;

/** Bytes of the sample_id trailer that records other than SAMPLE carry (sample_id_all). */
export function sampleIdSize(sampleType: number): number {
  let n = 0;
  for (const bit of TRAILER_BITS) if (sampleType & bit) n += 8;
  return n;
}

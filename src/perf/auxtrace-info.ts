/**
 * PERF_RECORD_AUXTRACE_INFO, and the Intel PT private words perf stores in it
 * (tools/perf/arch/x86/util/intel-pt.c, util/intel-pt.h): PMU type, TSC
 * conversion, the config bits that were used, snapshot mode, per-cpu mmaps, the
 * MTC/TSC:CTC/nominal-frequency parameters a decoder needs, and the address filter.
 * Older perf wrote fewer words; what is missing is reported as undefined.
 */
import type { PerfEvent } from "./attr.js";
import { u32, u64 } from "./bytes.js";

/** auxtrace_info.type values (enum auxtrace_type). */
export const AUXTRACE_TYPE_NAMES = [
  "unknown",
  "intel_pt",
  "intel_bts",
  "cs_etm",
  "arm_spe",
  "s390_cpumsf",
  "hisi_ptt",
];

/** The Intel PT words in order (enum intel_pt_info_priv's first 17). */
const INTEL_PT_WORDS = [
  "pmuType",
  "timeShift",
  "timeMult",
  "timeZero",
  "capUserTimeZero",
  "tscBit",
  "noRetCompBit",
  "haveSchedSwitch",
  "snapshotMode",
  "perCpuMmaps",
  "mtcBit",
  "mtcFreqBits",
  "tscCtcN",
  "tscCtcD",
  "cycBit",
  "maxNonTurboRatio",
  "filterStrLen",
] as const;

export type IntelPtInfo = { [K in (typeof INTEL_PT_WORDS)[number]]?: bigint } & {
  /** The address filter string (`--filter`), when recorded. */
  filter?: string;
};

export interface AuxtraceInfo {
  type: number;
  typeName: string;
  /** The private words, exact. */
  priv: bigint[];
  /** For type intel_pt: the words by name. */
  intelPt?: IntelPtInfo;
}

const utf8 = new TextDecoder();

/** Parse an AUXTRACE_INFO record's bytes (header included); undefined when shorter than 16 bytes. */
export function parseAuxtraceInfo(b: Uint8Array): AuxtraceInfo | undefined {
  if (b.length < 16) return undefined;
  const type = u32(b, 8);
  const priv: bigint[] = [];
  for (let p = 16; p + 8 <= b.length; p += 8) priv.push(u64(b, p));
  const info: AuxtraceInfo = { type, typeName: AUXTRACE_TYPE_NAMES[type] ?? `type ${type}`, priv };
  if (type === 1) {
    const pt: IntelPtInfo = {};
    INTEL_PT_WORDS.forEach((name, i) => {
      if (i < priv.length) pt[name] = priv[i]!;
    });
    const len = Number(pt.filterStrLen ?? 0n);
    const at = 16 + INTEL_PT_WORDS.length * 8;
    if (len > 0 && at + len <= b.length) {
      const bytes = b.subarray(at, at + len);
      const nul = bytes.indexOf(0);
      pt.filter = utf8.decode(nul >= 0 ? bytes.subarray(0, nul) : bytes);
    }
    info.intelPt = pt;
  }
  return info;
}

/** What ptdump/ptxed need to be told about an Intel PT recording (their option names). */
export interface IntelPtDecodeParams {
  /** `--mtc-freq`: the MTC period field of the event's config (bits set in mtcFreqBits). */
  mtcFreq?: number;
  /** `--nom-freq`: the maximum non-turbo ratio. */
  nomFreq?: number;
  /** `--cpuid-0x15.eax` / `.ebx`: the TSC:CTC ratio's denominator and numerator. */
  cpuid15Eax?: number;
  cpuid15Ebx?: number;
  /** The event's config with the TSC, MTC, CYC and no-RET-compression bits decoded. */
  tsc?: boolean;
  mtc?: boolean;
  cyc?: boolean;
  noRetComp?: boolean;
}

/** The intel_pt event among `events`: the one of the PMU type the Intel PT words name. */
export function intelPtEvent(
  pt: IntelPtInfo | undefined,
  events: readonly PerfEvent[],
): PerfEvent | undefined {
  const type = pt?.pmuType;
  return type === undefined ? undefined : events.find((e) => BigInt(e.attr.type) === type);
}

/** Derive the decoder parameters from the Intel PT words and the intel_pt event's config. */
export function intelPtDecodeParams(pt: IntelPtInfo, events: readonly PerfEvent[]): IntelPtDecodeParams {
  const params: IntelPtDecodeParams = {};
  const event = intelPtEvent(pt, events);
  const config = event?.attr.config;
  const bit = (mask: bigint | undefined) =>
    config === undefined || !mask ? undefined : (config & mask) !== 0n;
  if (config !== undefined && pt.mtcFreqBits) {
    let mask = pt.mtcFreqBits;
    let shift = 0n;
    while (!(mask & 1n)) {
      mask >>= 1n;
      shift++;
    }
    params.mtcFreq = Number((config >> shift) & mask);
  }
  if (pt.maxNonTurboRatio !== undefined) params.nomFreq = Number(pt.maxNonTurboRatio);
  if (pt.tscCtcD !== undefined) params.cpuid15Eax = Number(pt.tscCtcD);
  if (pt.tscCtcN !== undefined) params.cpuid15Ebx = Number(pt.tscCtcN);
  const tsc = bit(pt.tscBit);
  if (tsc !== undefined) params.tsc = tsc;
  const mtc = bit(pt.mtcBit);
  if (mtc !== undefined) params.mtc = mtc;
  const cyc = bit(pt.cycBit);
  if (cyc !== undefined) params.cyc = cyc;
  const noRetComp = bit(pt.noRetCompBit);
  if (noRetComp !== undefined) params.noRetComp = noRetComp;
  return params;
}

/** `family/model/stepping` for `--cpu` from the cpuid feature (`GenuineIntel,6,94,3`), if Intel. */
export function cpuFromCpuid(cpuid: string | undefined): string | undefined {
  const m = /^GenuineIntel,(\d+),(\d+),(\d+)/.exec(cpuid ?? "");
  return m ? `${m[1]}/${m[2]}/${m[3]}` : undefined;
}

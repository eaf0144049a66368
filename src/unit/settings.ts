/**
 * The trace unit's configuration in `ptkit simulate`'s words, as the WRMSRs software
 * would do: named options set IA32_RTIT_CTL fields (and CR3_MATCH, ADDRn_A/B) on top of
 * `--ctl` (default: TraceEn, BranchEn, OS and User, plus ToPA on a CPU without
 * single-range output, so that the default is one the CPU accepts). The writes come in
 * the order software programs the unit, TraceEn last; the caller applies them to an
 * MsrFile, which rejects what the processor rejects (#GP, naming the field).
 *
 * One table of option names ({@link TRACE_OPTIONS}) serves the command line (which
 * parses it with the rest of its options) and the benchmarks and tools that describe a
 * configuration in the same words.
 */
import { parseCUint } from "../cpu/index.js";
import { type Halves, setField } from "./bits.js";
import { AddrCfg, CTL, CTL_ADDR_CFG, MAX_ADDR_RANGES, Msr } from "./msr-layout.js";
import { type PresetName, presetDefaultToPA } from "./presets.js";

const U64_MAX = (1n << 64n) - 1n;

/** The options that write an MSR as it is: `--ctl VALUE`, `--addr0-a VALUE`, … */
const RAW_MSRS: Record<string, number> = {
  ctl: Msr.Ctl,
  status: Msr.Status,
  "cr3-match": Msr.Cr3Match,
};
for (let n = 0; n < MAX_ADDR_RANGES; n++) {
  RAW_MSRS[`addr${n}-a`] = Msr.Addr0A + 2 * n;
  RAW_MSRS[`addr${n}-b`] = Msr.Addr0B + 2 * n;
}

/** The configuration options, in node:util `parseArgs`' form. */
export const TRACE_OPTIONS = {
  user: { type: "boolean" },
  kernel: { type: "boolean" },
  "no-retc": { type: "boolean" },
  "no-branch": { type: "boolean" },
  "psb-freq": { type: "string" },
  mtc: { type: "string" },
  cyc: { type: "string" },
  tsc: { type: "boolean" },
  ptw: { type: "boolean" },
  "fup-on-ptw": { type: "boolean" },
  "pwr-evt": { type: "boolean" },
  "event-trace": { type: "boolean" },
  "cr3-filter": { type: "string" },
  filter: { type: "string", multiple: true },
  stop: { type: "string", multiple: true },
  ...(Object.fromEntries(Object.keys(RAW_MSRS).map((k) => [k, { type: "string" }])) as Record<
    string,
    { type: "string" }
  >),
} as const;

/** perf's environments around a program: `perf record -e intel_pt//u`, `//k`, `//uk` (exec/perf-env.ts). */
export const ENV_NAMES = ["perf-user", "perf-kernel", "perf-all"] as const;
export type EnvName = (typeof ENV_NAMES)[number];

/** Option values by name, as `parseArgs` gives them. */
export type TraceOptionValues = Record<string, string | boolean | string[] | undefined>;

/** One WRMSR; `option` names what asked for the value, for messages. */
export interface MsrWrite {
  msr: number;
  value: bigint;
  option: string;
}

/** Where the output goes, as its two MSRs (undefined: the packet bytes only). */
export interface OutputRegisters {
  /** `--topa` or `--single-range`, for messages. */
  option: string;
  topa: boolean;
  outputBase: bigint;
  outputMaskPtrs: bigint;
}

/** A C integer below 2^64, or an error message naming the option. */
export function optionU64(option: string, text: string): bigint | string {
  const v = parseCUint(text);
  if (v === undefined || v > U64_MAX) return `--${option}: '${text}' is not a number below 2^64`;
  return v;
}

/** A 4-bit CTL field value. */
function field4(option: string, text: string): number | string {
  const v = parseCUint(text);
  if (v === undefined || v > 15n) return `--${option}: '${text}' is not a number 0..15`;
  return Number(v);
}

/**
 * The WRMSRs the options ask for, CTL last; or an error message. `env`: perf's
 * environment, which traces CPL 3, CPL 0 or both unless `--user`/`--kernel` say.
 */
export function traceWrites(
  values: TraceOptionValues,
  preset: PresetName,
  output?: OutputRegisters,
  env?: EnvName,
): MsrWrite[] | string {
  const raw = new Map<number, { value: bigint; option: string }>();
  for (const [name, msr] of Object.entries(RAW_MSRS)) {
    const text = values[name] as string | undefined;
    if (text === undefined) continue;
    const v = optionU64(name, text);
    if (typeof v === "string") return v;
    raw.set(msr, { value: v, option: `--${name}` });
  }

  const ctl: Halves = { hi: 0, lo: 0 };
  const base = raw.get(Msr.Ctl)?.value;
  if (base === undefined) {
    setField(ctl, CTL.TraceEn, 1);
    setField(ctl, CTL.BranchEn, 1);
    setField(ctl, CTL.OS, 1);
    setField(ctl, CTL.User, 1);
    // Without an output layout only the packets matter, but the output mode is still
    // checked at TraceEn: pick one the CPU has.
    if (presetDefaultToPA(preset)) setField(ctl, CTL.ToPA, 1);
  } else {
    ctl.hi = Number(base >> 32n);
    ctl.lo = Number(base & 0xffffffffn);
  }
  const named: string[] = [];
  const flag = (name: string, f: (typeof CTL)[keyof typeof CTL], value: number) => {
    if (!values[name]) return;
    setField(ctl, f, value);
    named.push(`--${name}`);
  };
  if (values.user || values.kernel) {
    setField(ctl, CTL.User, values.user ? 1 : 0);
    setField(ctl, CTL.OS, values.kernel ? 1 : 0);
    named.push(values.user ? "--user" : "--kernel");
  } else if (env !== undefined) {
    // perf's //u, //k, //uk.
    setField(ctl, CTL.User, env === "perf-kernel" ? 0 : 1);
    setField(ctl, CTL.OS, env === "perf-user" ? 0 : 1);
    named.push(`--env ${env}`);
  }
  flag("no-retc", CTL.DisRETC, 1);
  flag("no-branch", CTL.BranchEn, 0);
  flag("tsc", CTL.TSCEn, 1);
  flag("ptw", CTL.PTWEn, 1);
  flag("fup-on-ptw", CTL.FUPonPTW, 1);
  flag("pwr-evt", CTL.PwrEvtEn, 1);
  // Refused (the MSR model's #GP naming EventEn) where CPUID.14H.0:EBX[7] is 0: so far
  // every preset, as none of the CPUID dumps they come from enumerates Event Trace.
  flag("event-trace", CTL.EventEn, 1);
  for (const [name, enable, fieldOf] of [
    ["psb-freq", undefined, CTL.PSBFreq],
    ["mtc", CTL.MTCEn, CTL.MTCFreq],
    ["cyc", CTL.CYCEn, CTL.CycThresh],
  ] as const) {
    const text = values[name] as string | undefined;
    if (text === undefined) continue;
    const v = field4(name, text);
    if (typeof v === "string") return v;
    if (enable) setField(ctl, enable, 1);
    setField(ctl, fieldOf, v);
    named.push(`--${name}`);
  }
  if (values["cr3-filter"] !== undefined) {
    const v = optionU64("cr3-filter", values["cr3-filter"] as string);
    if (typeof v === "string") return v;
    setField(ctl, CTL.CR3Filter, 1);
    raw.set(Msr.Cr3Match, { value: v, option: "--cr3-filter" });
    named.push("--cr3-filter");
  }

  // --filter and --stop take the address ranges in order: range n, ADDRn_CFG.
  let n = 0;
  for (const [name, cfg] of [
    ["filter", AddrCfg.Filter],
    ["stop", AddrCfg.TraceStop],
  ] as const) {
    for (const text of (values[name] as string[] | undefined) ?? []) {
      const m = /^([^-]+)-([^-]+)$/.exec(text);
      const a = m ? parseCUint(m[1]!) : undefined;
      const b = m ? parseCUint(m[2]!) : undefined;
      if (a === undefined || b === undefined || a > U64_MAX || b > U64_MAX)
        return `--${name}: '${text}' is not <from>-<to> (two addresses, the range includes both)`;
      if (n === MAX_ADDR_RANGES) return `--${name}: at most ${MAX_ADDR_RANGES} ranges in all`;
      setField(ctl, CTL_ADDR_CFG[n]!, cfg);
      raw.set(Msr.Addr0A + 2 * n, { value: a, option: `--${name}` });
      raw.set(Msr.Addr0B + 2 * n, { value: b, option: `--${name}` });
      named.push(`--${name}`);
      n++;
    }
  }

  if (output !== undefined) {
    raw.set(Msr.OutputBase, { value: output.outputBase, option: output.option });
    raw.set(Msr.OutputMaskPtrs, { value: output.outputMaskPtrs, option: output.option });
    setField(ctl, CTL.ToPA, output.topa ? 1 : 0);
    named.push(output.option);
  }

  const writes: MsrWrite[] = [];
  for (const [msr, w] of [...raw].sort((x, y) => order(x[0]) - order(y[0]))) {
    if (msr !== Msr.Ctl) writes.push({ msr, ...w });
  }
  const option = [...(base === undefined ? [] : ["--ctl"]), ...named].join(" ") || "the default";
  writes.push({ msr: Msr.Ctl, value: (BigInt(ctl.hi >>> 0) << 32n) | BigInt(ctl.lo >>> 0), option });
  return writes;
}

/** STATUS first, then CR3_MATCH, the address ranges, and the output MSRs. */
function order(msr: number): number {
  if (msr === Msr.Status) return 0;
  if (msr === Msr.Cr3Match) return 1;
  return msr < Msr.Ctl ? msr + 0x1000 : msr;
}

/**
 * `ptkit simulate` options: where the execution comes from, where the trace goes, and
 * the trace unit's configuration as MSR values and/or named options.
 *
 * Named options set IA32_RTIT_CTL fields (and CR3_MATCH, ADDRn_A/B) on top of `--ctl`
 * (default: TraceEn, BranchEn, OS and User, plus ToPA on a CPU without single-range
 * output, so that the default is one the CPU accepts). The result is a list of WRMSRs in the
 * order software programs the unit, TraceEn last; the caller applies them to an
 * MsrFile, which rejects what the processor rejects (#GP, naming the field).
 */
import { parseArgs } from "node:util";
import { parseCUint } from "../cpu/index.js";
import { type Halves, setField } from "../unit/bits.js";
import { AddrCfg, CTL, CTL_ADDR_CFG, MAX_ADDR_RANGES, Msr } from "../unit/msr-layout.js";
import { PRESET_NAMES, type PresetName, presetDefaultToPA } from "../unit/presets.js";
import { layoutRegisters, type OutputLayout, parseSingleRange, parseTopa } from "./simulate-memory.js";

export type ExecFormat = "jsonl" | "binary" | "lackey";

export interface SimulateArgs {
  /** An execution file, or a command to run under valgrind (after `--`). */
  input: { file: string } | { command: string[] };
  /** Input format; undefined: detect from the contents. */
  format: ExecFormat | undefined;
  /** The raw trace file. */
  output: string;
  /** Write the execution here too (`.jsonl`: JSON Lines, else binary). */
  saveExec: string | undefined;
  /** Keep valgrind's lackey log here (with a command). */
  saveLog: string | undefined;
  /** CR3 of the process converted from a lackey log. */
  cr3: bigint | undefined;
  /**
   * `--env perf-user|perf-kernel|perf-all[:toggle|:no-toggle][:no-data]`: perf's
   * environment around the program (src/unit/exec/perf-env.ts), tracing CPL 3, CPL 0
   * or both (User/OS, unless --user or --kernel says otherwise); `toggle`: TraceEn
   * cleared and set in every kernel visit (default with `--cpu broadwell`, as its
   * captures show); `no-data`: no data-page faults.
   */
  env: { name: EnvName; toggleEveryVisit: boolean; dataFaults: boolean } | undefined;
  preset: PresetName;
  /**
   * `--cpu` was given: the model takes that core's behaviour profile. Without it,
   * Skylake's capabilities with the SDM's choices where it leaves them open.
   */
  profiled: boolean;
  /** Output to memory (single range or ToPA), or undefined for the packet bytes only. */
  layout: OutputLayout | undefined;
  /** Write the memory image with this file name prefix. */
  memory: string | undefined;
  /** WRMSRs in order; `option` names what asked for the value, for messages. */
  writes: { msr: number; value: bigint; option: string }[];
}

/** perf's environments: `perf record -e intel_pt//u`, `//k`, `//uk` around the program. */
export const ENV_NAMES = ["perf-user", "perf-kernel", "perf-all"] as const;
export type EnvName = (typeof ENV_NAMES)[number];

export type SimulateParse = SimulateArgs | { help: true } | { error: string };

const U64_MAX = (1n << 64n) - 1n;
const DEFAULT_PRESET: PresetName = "skylake";

const RAW_MSRS: Record<string, number> = {
  ctl: Msr.Ctl,
  status: Msr.Status,
  "cr3-match": Msr.Cr3Match,
};
for (let n = 0; n < MAX_ADDR_RANGES; n++) {
  RAW_MSRS[`addr${n}-a`] = Msr.Addr0A + 2 * n;
  RAW_MSRS[`addr${n}-b`] = Msr.Addr0B + 2 * n;
}

const OPTIONS = {
  output: { type: "string", short: "o" },
  format: { type: "string" },
  "save-exec": { type: "string" },
  "save-log": { type: "string" },
  cr3: { type: "string" },
  cpu: { type: "string" },
  env: { type: "string" },
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
  "single-range": { type: "string" },
  topa: { type: "string" },
  memory: { type: "string" },
  help: { type: "boolean", short: "h" },
  ...Object.fromEntries(Object.keys(RAW_MSRS).map((k) => [k, { type: "string" }])),
} as const;

type Values = Record<string, string | boolean | string[] | undefined>;

/** A C integer below 2^64, or an error message naming the option. */
function u64(option: string, text: string): bigint | string {
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

export function parseSimulateArgs(argv: readonly string[]): SimulateParse {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const command = dash < 0 ? undefined : argv.slice(dash + 1);
  let values: Values;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: [...own], options: OPTIONS, allowPositionals: true, strict: true });
    values = parsed.values as Values;
    positionals = parsed.positionals;
  } catch (e) {
    return { error: (e as Error).message };
  }
  if (values.help) return { help: true };

  let input: SimulateArgs["input"];
  if (command !== undefined) {
    if (command.length === 0) return { error: "expected a command after '--'" };
    if (positionals.length > 0) return { error: "give either an execution file or '-- <command>', not both" };
    input = { command };
  } else {
    if (positionals.length !== 1) return { error: "expected one execution file, or '-- <command>'" };
    input = { file: positionals[0]! };
  }
  const output = values.output as string | undefined;
  if (output === undefined) return { error: "-o/--output <trace file> is required" };
  const format = values.format as string | undefined;
  if (format !== undefined && format !== "jsonl" && format !== "binary" && format !== "lackey")
    return { error: `--format: '${format}' is not jsonl, binary or lackey` };
  if (values["save-log"] !== undefined && command === undefined)
    return { error: "--save-log needs '-- <command>' (a log file is already a file)" };
  const preset = (values.cpu as string | undefined) ?? DEFAULT_PRESET;
  if (!(PRESET_NAMES as string[]).includes(preset))
    return { error: `--cpu: '${preset}' is not one of ${PRESET_NAMES.join(", ")}` };
  let cr3: bigint | undefined;
  if (values.cr3 !== undefined) {
    const v = u64("cr3", values.cr3 as string);
    if (typeof v === "string") return { error: v };
    cr3 = v;
  }
  let env: SimulateArgs["env"];
  if (values.env !== undefined) {
    const [name, ...how] = (values.env as string).split(":");
    const known = ["toggle", "no-toggle", "no-data"];
    if (
      !(ENV_NAMES as readonly string[]).includes(name!) ||
      how.some((h) => !known.includes(h)) ||
      new Set(how).size < how.length
    )
      return {
        error: `--env: '${values.env}' is not ${ENV_NAMES.join(", ")} or one of them with :toggle or :no-toggle, and :no-data`,
      };
    if (how.includes("toggle") && how.includes("no-toggle"))
      return { error: "--env: :toggle or :no-toggle, not both" };
    const toggle = how.includes("toggle") ? true : how.includes("no-toggle") ? false : undefined;
    env = {
      name: name as EnvName,
      toggleEveryVisit: toggle ?? preset === "broadwell",
      dataFaults: !how.includes("no-data"),
    };
  }
  let layout: OutputLayout | string | undefined;
  if (values["single-range"] !== undefined && values.topa !== undefined)
    return { error: "give --single-range or --topa, not both" };
  if (values["single-range"] !== undefined) layout = parseSingleRange(values["single-range"] as string);
  else if (values.topa !== undefined) layout = parseTopa(values.topa as string);
  if (typeof layout === "string") return { error: layout };
  if (values.memory !== undefined && layout === undefined)
    return { error: "--memory needs --single-range or --topa" };
  const writes = msrWrites(values, layout, preset as PresetName, env?.name);
  if (typeof writes === "string") return { error: writes };
  return {
    input,
    format,
    output,
    saveExec: values["save-exec"] as string | undefined,
    saveLog: values["save-log"] as string | undefined,
    cr3,
    env,
    preset: preset as PresetName,
    profiled: values.cpu !== undefined,
    layout,
    memory: values.memory as string | undefined,
    writes,
  };
}

/** The WRMSRs the options ask for, CTL last; or an error message. */
function msrWrites(
  values: Values,
  layout: OutputLayout | undefined,
  preset: PresetName,
  env: EnvName | undefined,
): SimulateArgs["writes"] | string {
  const raw = new Map<number, { value: bigint; option: string }>();
  for (const [name, msr] of Object.entries(RAW_MSRS)) {
    const text = values[name] as string | undefined;
    if (text === undefined) continue;
    const v = u64(name, text);
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
    // Without --single-range/--topa only the packets matter, but the output mode is
    // still checked at TraceEn: pick one the CPU has.
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
    const v = u64("cr3-filter", values["cr3-filter"] as string);
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

  if (layout !== undefined) {
    const option = layout.kind === "topa" ? "--topa" : "--single-range";
    const regs = layoutRegisters(layout);
    raw.set(Msr.OutputBase, { value: regs.outputBase, option });
    raw.set(Msr.OutputMaskPtrs, { value: regs.outputMaskPtrs, option });
    setField(ctl, CTL.ToPA, layout.kind === "topa" ? 1 : 0);
    named.push(option);
  }

  const writes: SimulateArgs["writes"] = [];
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

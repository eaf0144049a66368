/**
 * `ptkit flow` options: libipt ptxed's, read in order as ptxed reads them.
 *
 * Order matters to ptxed: `--raw` and `--elf` load when they are met (`--verbose` only
 * affects later `--elf`s), `--pt` creates the decoder from the configuration given so
 * far (later `--mtc-freq`, `--event:tick`, ... no longer reach it; `--cpu`, `--filter:*`
 * and the decoder choice after it are errors), and a bad option stops the command after
 * the options before it took effect. So parsing yields the loading steps in order,
 * snapshots of the configuration at `--pt`, and the output options, which apply to the
 * whole run wherever they appear.
 */
import { type Cpu, cpuErrata, parseCpu } from "../../cpu/index.js";
import { type DecoderConfig, defaultDecoderConfig } from "../../event/index.js";
import {
  type AnalysisOptions,
  defaultAnalysisOptions,
  parseAnalysisOption,
} from "../../session/analysis-options.js";
import { parseFileRange } from "../../session/file-range.js";
import { parseCodeFile, parseRawBytes, splitBase } from "../../session/flow-image.js";
import {
  defaultFlowOutput,
  type FlowDecoderKind,
  type FlowOutput,
  type RawStep,
} from "../../session/raw-options.js";
import { CPU_CONFIG_ERROR } from "../../session/raw-session.js";
import { defaultSidebandOptions, type SidebandOptions } from "../../session/sideband-config.js";
import { DECODER_NUMBERS, numberArg } from "../numbers.js";
import { parseSidebandOption } from "../sideband-options.js";

/** A step of loading code and opening the trace, or one that ends the options. */
export type FlowStep =
  | RawStep
  | { kind: "help" }
  | { kind: "version" }
  /**
   * A bad option: the steps before it run, then the command fails with this message
   * (and the line pointing at --help when `usage`), after printing `stdout` (lines).
   */
  | { kind: "error"; message: string; usage: boolean; stdout?: string[] };

export interface FlowArgs {
  /** In command-line order; help, version and error end the list. */
  steps: FlowStep[];
  output: FlowOutput;
  /** --sb:* and --pevent:* (channels keep the parameters in force where they appear). */
  sideband: SidebandOptions;
  /** ptkit's analysis outputs (--timeline, --folded, ...): apply to the whole run. */
  analysis: AnalysisOptions;
  /** Options that were accepted but change nothing (ptxed ignores them silently). */
  warnings: string[];
}

/** Decoder flags as ptxed keeps them: one set per decoder, chosen at `--pt`. */
interface DecoderFlags {
  tick: boolean;
  iflags: boolean;
  keepTcalOnOvf: boolean;
  endOnCall: boolean;
  endOnJump: boolean;
}

function noFlags(): DecoderFlags {
  return { tick: false, iflags: false, keepTcalOnOvf: false, endOnCall: false, endOnJump: false };
}

/** The parser's state between options. */
interface State {
  out: FlowOutput;
  steps: FlowStep[];
  verbose: boolean;
  decoder: FlowDecoderKind;
  /** --block-decoder or --insn-decoder was given. */
  decoderNamed: boolean;
  haveDecoder: boolean;
  cpu: Cpu | undefined;
  config: DecoderConfig;
  insnFlags: DecoderFlags;
  blockFlags: DecoderFlags;
  sideband: SidebandOptions;
  analysis: AnalysisOptions;
  warnings: string[];
}

const OUTPUT_FLAGS: Record<string, (o: FlowOutput) => void> = {
  "--att": (o) => {
    o.att = true;
  },
  "--no-inst": (o) => {
    o.noInst = true;
  },
  "--quiet": (o) => {
    o.quiet = true;
  },
  "-q": (o) => {
    o.quiet = true;
  },
  "--offset": (o) => {
    o.offset = true;
  },
  "--time": (o) => {
    o.time = true;
  },
  "--raw-insn": (o) => {
    o.rawInsn = true;
  },
  "--check": (o) => {
    o.check = true;
  },
  "--resync-on-error": (o) => {
    o.resyncOnError = true;
  },
  "--event:time": (o) => {
    o.eventTime = true;
  },
  "--event:ip": (o) => {
    o.eventIp = true;
  },
  "--block:show-blocks": (o) => {
    o.showBlocks = true;
  },
  "--stat": (o) => {
    o.stats = true;
  },
  "--stat:insn": (o) => {
    o.stats = true;
    o.statInsn = true;
  },
  "--stat:blocks": (o) => {
    o.stats = true;
    o.statBlocks = true;
  },
};

/** Flags that only reach a decoder created by a later `--pt`. */
const DECODER_FLAGS: Record<string, (s: State) => void> = {
  "--event:tick": (s) => {
    s.insnFlags.tick = true;
    s.blockFlags.tick = true;
  },
  "--event:iflags": (s) => {
    s.insnFlags.iflags = true;
    s.blockFlags.iflags = true;
  },
  "--insn:keep-tcal-on-ovf": (s) => {
    s.insnFlags.keepTcalOnOvf = true;
  },
  "--block:keep-tcal-on-ovf": (s) => {
    s.blockFlags.keepTcalOnOvf = true;
  },
  "--block:end-on-call": (s) => {
    s.blockFlags.endOnCall = true;
  },
  "--block:end-on-jump": (s) => {
    s.blockFlags.endOnJump = true;
  },
};

const U64_MAX = 0xffff_ffff_ffff_ffffn;
const FILTER = /^--filter:addr([0-3])_(cfg|a|b)$/;

/** ptxed applies a decoder option after --pt to nothing, silently; ptkit says so. */
function afterPt(arg: string): string {
  return `${arg} after --pt has no effect: options are read in order, give it before --pt.`;
}

function snapshot(s: State, arg: string): FlowStep {
  const flags = s.decoder === "insn" ? s.insnFlags : s.blockFlags;
  const f = s.config.addrFilter;
  const config: DecoderConfig = {
    ...s.config,
    addrFilter: { cfg: [...f.cfg], a: [...f.a], b: [...f.b] },
    keepTcalOnOvf: flags.keepTcalOnOvf,
    enableTickEvents: flags.tick,
    enableIflagsEvents: flags.iflags,
    // The instruction flow decoder has no block boundaries to move.
    endOnCall: s.decoder === "block" && flags.endOnCall,
    endOnJump: s.decoder === "block" && flags.endOnJump,
  };
  const range = parseFileRange(arg);
  if (typeof range === "string") {
    // ptxed checks the CPU before it reads the file argument.
    const stdout = s.cpu && !cpuErrata(s.cpu) ? [CPU_CONFIG_ERROR] : [];
    return { kind: "error", message: `bad file ${arg}: ${range}.`, usage: false, stdout };
  }
  return { kind: "pt", range, label: arg, decoder: s.decoder, named: s.decoderNamed, cpu: s.cpu, config };
}

/** `--raw file[:from[-to]]:base` as a step, or the error ptxed gives. */
function rawStep(arg: string): FlowStep {
  const raw = parseRawBytes(arg);
  if (raw === undefined)
    return {
      kind: "error",
      message: `--raw ${arg}: failed to parse the base address (want file[:from[-to]]:base).`,
      usage: false,
    };
  if (typeof raw === "string")
    return { kind: "error", message: `--raw ${arg}: bad file ${splitBase(arg).name}: ${raw}.`, usage: false };
  return { kind: "raw", raw };
}

/**
 * Handle the option at argv[i] (with its argument, if any). Returns how many words it
 * used, or an error message.
 */
function option(s: State, argv: readonly string[], i: number): number | string {
  const arg = argv[i]!;
  const value = argv[i + 1];
  const outputFlag = OUTPUT_FLAGS[arg];
  if (outputFlag) {
    outputFlag(s.out);
    return 1;
  }
  const decoderFlag = DECODER_FLAGS[arg];
  if (decoderFlag) {
    decoderFlag(s);
    if (s.haveDecoder) s.warnings.push(afterPt(arg));
    return 1;
  }
  if (arg === "--verbose" || arg === "-v") {
    s.verbose = true;
    return 1;
  }
  if (arg === "--pt" || arg === "--raw" || arg === "--elf" || arg === "--pevent:kcore") {
    if (value === undefined) return `${arg}: missing argument.`;
    if (arg === "--raw") s.steps.push(rawStep(value));
    else if (arg === "--elf") s.steps.push({ kind: "elf", file: parseCodeFile(value), verbose: s.verbose });
    else if (arg === "--pevent:kcore")
      s.steps.push({ kind: "kcore", file: parseCodeFile(value), verbose: s.verbose });
    else {
      if (s.haveDecoder) return `duplicate pt sources: ${value}.`;
      s.haveDecoder = true;
      s.steps.push(snapshot(s, value));
    }
    return 2;
  }
  if (arg === "--insn-decoder" || arg === "--block-decoder") {
    if (s.haveDecoder) return `please specify ${arg} before --pt.`;
    s.decoder = arg === "--insn-decoder" ? "insn" : "block";
    s.decoderNamed = true;
    return 1;
  }
  if (arg === "--cpu") {
    if (s.haveDecoder) return "please specify --cpu before --pt.";
    if (value === undefined) return "--cpu: missing argument.";
    if (value === "none") s.cpu = undefined;
    else {
      const cpu = parseCpu(value);
      if (!cpu) return "cpu must be specified as f/m[/s]";
      s.cpu = cpu;
    }
    return 2;
  }
  const num = DECODER_NUMBERS[arg];
  if (num) {
    const v = numberArg(arg, value, num.max);
    if (typeof v === "string") return v;
    s.config[num.key] = Number(v);
    if (s.haveDecoder) s.warnings.push(afterPt(arg));
    return 2;
  }
  const filter = FILTER.exec(arg);
  if (filter) {
    if (s.haveDecoder) return `please specify ${arg} before --pt.`;
    const n = Number(filter[1]);
    const field = filter[2];
    const v = numberArg(arg, value, field === "cfg" ? 15n : U64_MAX);
    if (typeof v === "string") return v;
    const f = s.config.addrFilter;
    // ptxed ORs repeated ADDRn_CFG values into IA32_RTIT_CTL.
    if (field === "cfg") f.cfg[n] = f.cfg[n]! | Number(v);
    else if (field === "a") f.a[n] = v;
    else f.b[n] = v;
    return 2;
  }
  if (arg === "-j" || arg === "--jobs") {
    if (value === undefined) return `${arg}: missing argument.`;
    s.out.jobs = value;
    return 2;
  }
  if (arg === "--iscache-limit") {
    // ptkit keeps every loaded file in memory: the limit is checked and has no effect.
    const v = numberArg(arg, value, U64_MAX);
    return typeof v === "string" ? v : 2;
  }
  const sideband = parseSidebandOption(s.sideband, argv, i, "flow");
  if (sideband !== 0) return sideband;
  // The two-pass bounded timeline is ptkit perf's so far (src/session/perf-timeline-summary.ts).
  if (arg === "--timeline-summary" || arg === "--timeline-budget")
    return `${arg}: only ptkit perf bounds a timeline this way so far; leave out short calls with --min-duration.`;
  const analysis = parseAnalysisOption(s.analysis, argv, i);
  if (analysis !== 0) return analysis;
  return `unknown option: ${arg}.`;
}

export function parseFlowArgs(argv: readonly string[]): FlowArgs {
  const s: State = {
    out: defaultFlowOutput(),
    steps: [],
    verbose: false,
    decoder: "block",
    decoderNamed: false,
    haveDecoder: false,
    cpu: undefined,
    config: defaultDecoderConfig(),
    insnFlags: noFlags(),
    blockFlags: noFlags(),
    sideband: defaultSidebandOptions(),
    analysis: defaultAnalysisOptions(),
    warnings: [],
  };
  for (let i = 0; i < argv.length; ) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") {
      s.steps.push({ kind: "help" });
      break;
    }
    if (arg === "--version") {
      s.steps.push({ kind: "version" });
      break;
    }
    const used = option(s, argv, i);
    if (typeof used === "string") {
      s.steps.push({ kind: "error", message: used, usage: true });
      break;
    }
    // A file argument that does not parse (--raw, --pt) ends the options as a bad option does.
    if (s.steps.at(-1)?.kind === "error") break;
    i += used;
  }
  // Without a selection, --stat collects everything the decoder counts.
  const o = s.out;
  if (o.stats && !o.statInsn && !o.statBlocks) {
    o.statInsn = true;
    o.statBlocks = s.decoder === "block";
  }
  return { steps: s.steps, output: o, sideband: s.sideband, analysis: s.analysis, warnings: s.warnings };
}

/**
 * The answers a person drops a raw Intel PT trace for (with the ELF files or code
 * dumps it ran and the decoder settings perf.data would have recorded: CPU, MTC and
 * nominal frequency, CPUID 0x15), in one call: the raw-trace pipeline
 * (raw-session.ts) run once with every analysis output on, read back into what a page
 * shows (answers.ts), as perfAnswers does for a perf.data file. The same outputs as
 * `ptkit flow --cpu F/M/S --mtc-freq ... --elf FILE[:BASE] --pt TRACE --quiet
 * --timeline ... --folded ... --coverage ... --afl-map ... --latency ...`.
 */

import type { NameDemangler } from "../analysis/index.js";
import { diagnosticLine } from "../base/diagnostic.js";
import { parseCpu, parseCUint } from "../cpu/index.js";
import { defaultDecoderConfig } from "../event/index.js";
import { PerfError } from "../perf/index.js";
import { ANSWER_FILES } from "./answer-files.js";
import { answerAnalysis, type PerfAnswers, readAnswers } from "./answers.js";
import { fileKind, ioErrorText, readHead } from "./file-kind.js";
import type { FilesIo } from "./files-io.js";
import type { InputHints } from "./hints.js";
import { LineWriter } from "./io.js";
import { defaultFlowOutput, type RawStep } from "./raw-options.js";
import { decodeRaw, type RawInput, setupRaw } from "./raw-session.js";
import { defaultSidebandOptions } from "./sideband-config.js";

/** A file of code: an ELF file, or the raw bytes of memory (which need a load address). */
export interface RawCodeFile {
  name: string;
  /**
   * Where it is loaded (a C number, e.g. 0x400000): an ELF file's lowest segment goes
   * there (empty or absent: the ELF file's own addresses), raw bytes start there.
   */
  base?: string;
}

/** What the decoder needs to know that a raw trace does not say (ptxed's options of the same names). */
export interface RawDecoderSettings {
  /** The CPU, `family/model[/stepping]` (decimal or 0x-hex): its errata are worked around. */
  cpu?: string;
  /** IA32_RTIT_CTL.MTCFreq (--mtc-freq). */
  mtcFreq?: number;
  /** The nominal frequency, MSR_PLATFORM_INFO[15:8] (--nom-freq): the TSC runs at it times 100 MHz. */
  nomFreq?: number;
  /** CPUID leaf 0x15: the TSC:core crystal clock ratio (--cpuid-0x15.eax and .ebx). */
  cpuid15Eax?: number;
  cpuid15Ebx?: number;
}

export interface RawAnswersOptions {
  /** Names C++ and Rust symbols. */
  demangler?: NameDemangler;
  /** The page's remedies in errors and warnings (see hints.ts), e.g. its fields' names. */
  hints?: InputHints;
  /** The timeline leaves out calls shorter than this (ns; the other outputs count every call). */
  timelineMinDuration?: number;
}

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** Decode errors listed as warnings (the rest are counted). */
const SHOWN_ERRORS = 100;

const NUMBER_LIMITS = {
  mtcFreq: 0xff,
  nomFreq: 0xff,
  cpuid15Eax: 0xffffffff,
  cpuid15Ebx: 0xffffffff,
} as const;

/** The steps that load `code` and open `trace`, or an error message. */
function rawSteps(
  io: FilesIo,
  trace: string,
  code: readonly RawCodeFile[],
  settings: RawDecoderSettings,
): RawStep[] | string {
  const steps: RawStep[] = [];
  for (const { name, base } of code) {
    const given = base?.trim() ?? "";
    const at = given === "" ? undefined : parseCUint(given);
    if (given !== "" && (at === undefined || at > U64_MAX))
      return `${name}: bad load address: ${given} (want a number such as 0x400000).`;
    try {
      io.fileSize(name);
    } catch (e) {
      return `${name}: ${ioErrorText(e)}.`;
    }
    const elf = fileKind(readHead(io, name)) === "elf";
    // Names are files' own: a name such as libfoo.so:1 holds no load address or range.
    if (elf) steps.push({ kind: "elf", file: { name, base: at }, verbose: false });
    else if (at === undefined)
      return `${name} is not an ELF file: give the address its bytes were loaded at to decode it as raw memory.`;
    else steps.push({ kind: "raw", raw: { range: { path: name, from: 0, to: undefined }, base: at } });
  }
  const config = defaultDecoderConfig();
  for (const key of Object.keys(NUMBER_LIMITS) as Array<keyof typeof NUMBER_LIMITS>) {
    const v = settings[key];
    if (v === undefined) continue;
    if (!Number.isInteger(v) || v < 0 || v > NUMBER_LIMITS[key])
      return `${key}: want a whole number from 0 to ${NUMBER_LIMITS[key]}: ${v}.`;
    config[key] = v;
  }
  const cpuText = settings.cpu?.trim() ?? "";
  const cpu = cpuText === "" ? undefined : parseCpu(cpuText);
  if (cpu === undefined && cpuText !== "")
    return `cpu: want family/model[/stepping], e.g. 6/85/4: ${cpuText}.`;
  steps.push({ kind: "pt", range: { path: trace, from: 0, to: undefined }, decoder: "block", cpu, config });
  return steps;
}

/**
 * Decode the raw trace at `trace` in `io` against `code` (files in `io` too), with the
 * decoder `settings`: the answers, with `status` 1 and `error` when it failed.
 */
export async function rawAnswers(
  io: FilesIo,
  trace: string,
  code: readonly RawCodeFile[],
  settings: RawDecoderSettings = {},
  options: RawAnswersOptions = {},
): Promise<PerfAnswers> {
  const warnings: string[] = [];
  const warn = (text: string) => warnings.push(text);
  const out = new LineWriter((text) => io.stdout(text));
  const analysis = answerAnalysis(options.timelineMinDuration);
  const output = { ...defaultFlowOutput(), quiet: true, stats: true, statInsn: true };
  let error: string | undefined;
  const steps = rawSteps(io, trace, code, settings);
  if (typeof steps === "string") error = steps;
  else {
    const input: RawInput = {
      steps,
      output,
      sideband: defaultSidebandOptions(),
      analysis,
      hints: options.hints,
    };
    const setup = setupRaw(io, out, input, warn);
    if (typeof setup === "string") error = setup;
    else {
      try {
        error = await decodeRaw(io, out, setup, { warn, demangler: options.demangler });
      } catch (e) {
        if (!(e instanceof PerfError) && (e as { code?: string }).code === undefined) throw e;
        error = e instanceof PerfError ? diagnosticLine(trace, e) : `${trace}: ${ioErrorText(e)}`;
      }
      out.flush();
      const read = (hi: number, lo: number, into: Uint8Array, size: number) =>
        Math.max(0, setup.image.read(hi, lo, into, size));
      return readAnswers(io, analysis, outcome(io, error, warnings), read);
    }
  }
  return readAnswers(io, analysis, outcome(io, error, warnings), () => 0);
}

/**
 * How the decode went: its diagnostics (ptxed's `[offset, ip: error]` lines, printed
 * even when quiet) are warnings, and the instruction count (`insn: N.`) the summary.
 */
function outcome(io: FilesIo, error: string | undefined, warnings: string[]) {
  const lines = io.stdoutText.split("\n").filter((l) => l !== "");
  const count = /^insn: (\d+)\.$/.exec(lines.at(-1) ?? "");
  const errors = lines.filter((l) => l.startsWith("["));
  const shown = errors.slice(0, SHOWN_ERRORS).map((l) => `decode ${l}`);
  if (errors.length > SHOWN_ERRORS) shown.push(`and ${errors.length - SHOWN_ERRORS} more decode errors`);
  let summary = "";
  if (count) {
    const n = Number(count[1]);
    // As perf's summary: the analysis outputs (the annotation is made after it).
    const wrote = Object.values(ANSWER_FILES).filter(
      (name) => name !== ANSWER_FILES.annotate && io.outputChunks(name) !== undefined,
    );
    summary = `wrote ${wrote.join(", ")}: ${n} instruction${n === 1 ? "" : "s"}, ${errors.length} decode error${errors.length === 1 ? "" : "s"}`;
  }
  return {
    status: error === undefined ? 0 : 1,
    error,
    summary,
    warnings: [...warnings, ...shown],
    missing: [],
  };
}

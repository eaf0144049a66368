/**
 * `ptkit simulate` options: where the execution comes from, where the trace goes, and
 * the trace unit's configuration as MSR values and/or named options (their meaning, as
 * WRMSRs, is the unit layer's: src/unit/settings.ts).
 */
import { parseArgs } from "node:util";
import { type PresetName, presetNamed } from "../../unit/presets.js";
import {
  type MsrWrite,
  optionU64,
  TRACE_OPTIONS,
  type TraceOptionValues,
  traceWrites,
} from "../../unit/settings.js";
import { layoutRegisters, type OutputLayout, parseSingleRange, parseTopa } from "./memory.js";

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
   * `--env perf-user[:toggle|:no-toggle]`: perf's environment around the program
   * (src/unit/exec/perf-env.ts); `toggle`: TraceEn cleared and set in every kernel
   * visit (default with `--cpu broadwell`, as its captures show).
   */
  env: { toggleEveryVisit: boolean } | undefined;
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
  writes: MsrWrite[];
}

export type SimulateParse = SimulateArgs | { help: true } | { error: string };

const OPTIONS = {
  output: { type: "string", short: "o" },
  format: { type: "string" },
  "save-exec": { type: "string" },
  "save-log": { type: "string" },
  cr3: { type: "string" },
  cpu: { type: "string" },
  env: { type: "string" },
  "single-range": { type: "string" },
  topa: { type: "string" },
  memory: { type: "string" },
  help: { type: "boolean", short: "h" },
  ...TRACE_OPTIONS,
} as const;

/** The command line of `ptkit simulate` (its options, then a file or `-- COMMAND`). */
export function parseSimulateArgs(argv: readonly string[]): SimulateParse {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const command = dash < 0 ? undefined : argv.slice(dash + 1);
  let values: TraceOptionValues;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: [...own], options: OPTIONS, allowPositionals: true, strict: true });
    values = parsed.values as TraceOptionValues;
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
  const named = presetNamed(values.cpu as string | undefined);
  if ("error" in named) return named;
  const { preset } = named;
  let cr3: bigint | undefined;
  if (values.cr3 !== undefined) {
    const v = optionU64("cr3", values.cr3 as string);
    if (typeof v === "string") return { error: v };
    cr3 = v;
  }
  let env: SimulateArgs["env"];
  if (values.env !== undefined) {
    const [name, how, ...rest] = (values.env as string).split(":");
    if (
      name !== "perf-user" ||
      rest.length > 0 ||
      (how !== undefined && how !== "toggle" && how !== "no-toggle")
    )
      return { error: `--env: '${values.env}' is not perf-user, perf-user:toggle or perf-user:no-toggle` };
    env = { toggleEveryVisit: how === undefined ? preset === "broadwell" : how === "toggle" };
  }
  let layout: OutputLayout | string | undefined;
  if (values["single-range"] !== undefined && values.topa !== undefined)
    return { error: "give --single-range or --topa, not both" };
  if (values["single-range"] !== undefined) layout = parseSingleRange(values["single-range"] as string);
  else if (values.topa !== undefined) layout = parseTopa(values.topa as string);
  if (typeof layout === "string") return { error: layout };
  if (values.memory !== undefined && layout === undefined)
    return { error: "--memory needs --single-range or --topa" };
  const registers = layout === undefined ? undefined : layoutRegisters(layout);
  const writes = traceWrites(
    values,
    preset,
    registers && {
      option: layout!.kind === "topa" ? "--topa" : "--single-range",
      topa: layout!.kind === "topa",
      ...registers,
    },
  );
  if (typeof writes === "string") return { error: writes };
  return {
    input,
    format,
    output,
    saveExec: values["save-exec"] as string | undefined,
    saveLog: values["save-log"] as string | undefined,
    cr3,
    env,
    preset,
    profiled: values.cpu !== undefined,
    layout,
    memory: values.memory as string | undefined,
    writes,
  };
}

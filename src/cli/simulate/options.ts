/**
 * `ptkit simulate` options: where the execution comes from, where the trace goes, and
 * the trace unit's configuration as MSR values and/or named options (their meaning, as
 * WRMSRs, is the unit layer's: src/unit/settings.ts).
 */
import { parseArgs } from "node:util";
import { type PresetName, presetNamed } from "../../unit/presets.js";
import {
  ENV_NAMES,
  type EnvName,
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
  const registers = layout === undefined ? undefined : layoutRegisters(layout);
  const writes = traceWrites(
    values,
    preset,
    registers && {
      option: layout!.kind === "topa" ? "--topa" : "--single-range",
      topa: layout!.kind === "topa",
      ...registers,
    },
    env?.name,
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

/**
 * `ptkit flow`: the ptxed-compatible instruction flow listing. Runs the option steps in
 * order (loading code, then the trace at --pt), decodes with the chosen decoder and
 * prints ptxed's output; diagnostics go to stdout as ptxed prints them, problems with
 * the command line and files to stderr.
 */
import { cpuErrata } from "../cpu/index.js";
import { PtEvent } from "../event/index.js";
import { BlockDecoder, InsnDecoder } from "../flow/index.js";
import { Image } from "../image/index.js";
import { ErrorCode, errorMessage, type TraceBytes } from "../packet/index.js";
import { wantsAnalysis, wantsTime } from "./analysis-options.js";
import type { AnalysisOutputs } from "./analysis-outputs.js";
import { expandArgFiles } from "./arg-files.js";
import { noPsbHint, traceFileProblem } from "./file-kind.js";
import { openFileRange, parseFileRange, type TraceInternals } from "./file-range.js";
import { BlockUnit } from "./flow-block-unit.js";
import { FLOW_HELP } from "./flow-help.js";
import { loadElf, loadRaw } from "./flow-image.js";
import { InsnUnit } from "./flow-insn-unit.js";
import { type FlowStep, parseFlowArgs } from "./flow-options.js";
import { FlowSession } from "./flow-session.js";
import { statsText } from "./flow-text.js";
import { CodeWalker } from "./flow-walk.js";
import { type CliIo, LineWriter } from "./io.js";
import { VERSION } from "./version.js";

type PtStep = Extract<FlowStep, { kind: "pt" }>;

/**
 * Run `ptkit flow` with `argv` (options, no command name); resolves to the exit code.
 * The analysis outputs and the sideband (the analysis and perf layers) are imported
 * only when asked for.
 */
export async function runFlow(
  argv: readonly string[],
  io: CliIo,
  internal: TraceInternals = {},
): Promise<number> {
  const words = expandArgFiles(io, argv);
  if (typeof words === "string") {
    io.stderr(`ptkit flow: ${words}\n`);
    return 1;
  }
  const { steps, output, sideband, analysis, warnings } = parseFlowArgs(words);
  for (const w of warnings) io.stderr(`ptkit flow: warning: ${w}\n`);
  const out = new LineWriter(io.stdout);
  const fail = (message: string, usage = false): number => {
    out.flush();
    io.stderr(`ptkit flow: ${message}\n${usage ? "Use --help or -h for help.\n" : ""}`);
    return 1;
  };
  const image = new Image("ptkit flow");
  // What --pevent:kcore loads: the start of every sideband process image.
  const kernel = new Image("kernel");
  let pt: { step: PtStep; trace: TraceBytes; path: string } | undefined;
  for (const step of steps) {
    switch (step.kind) {
      case "help":
        out.flush();
        io.stdout(FLOW_HELP);
        return 0;
      case "version":
        out.flush();
        io.stdout(`ptkit flow ${VERSION}\n`);
        return 0;
      case "error":
        return fail(step.message, true);
      case "raw": {
        const err = loadRaw(io, image, step.arg);
        if (err) return fail(err);
        break;
      }
      case "elf":
      case "kcore": {
        const verbose = step.verbose ? (line: string) => out.line(line) : undefined;
        const into = step.kind === "elf" ? image : kernel;
        const err = loadElf(io, into, step.arg, verbose, (w) => io.stderr(`ptkit flow: ${w}\n`));
        if (err) return fail(err);
        break;
      }
      case "pt": {
        if (step.cpu) {
          const errata = cpuErrata(step.cpu);
          // Like ptxed: say so on stdout and decode without errata workarounds.
          if (errata) step.config.errata = errata;
          else out.line(`[0, 0: config error: ${errorMessage(ErrorCode.BadCpu)}]`);
        }
        const range = parseFileRange(step.arg);
        if (typeof range === "string") return fail(`bad file ${step.arg}: ${range}.`);
        const trace = traceFileProblem(io, range.path) ?? openFileRange(io, range, internal.windowSize);
        if (typeof trace === "string") return fail(trace);
        pt = { step, trace, path: range.path };
        break;
      }
    }
  }
  if (!pt) return fail("no pt file (--pt).", true);
  const config = pt.step.config;
  let outputs: AnalysisOutputs | undefined;
  // Tick events give the analysis the time of MTC/CYC updates; printed only if asked for.
  const hideTicks = wantsTime(analysis) && !config.enableTickEvents;
  if (wantsAnalysis(analysis)) {
    const code = steps.flatMap((s) => (s.kind === "elf" || s.kind === "raw" ? [s] : []));
    // The nominal frequency (MSR_PLATFORM_INFO[15:8]) times 100 MHz is the TSC frequency.
    const nsPerTick = config.nomFreq > 0 ? 10 / config.nomFreq : 0;
    const warn = (w: string) => io.stderr(`ptkit flow: warning: ${w}\n`);
    const { AnalysisOutputs } = await import("./analysis-outputs.js");
    const opened = AnalysisOutputs.open(io, analysis, { code, nsPerTick, name: pt.step.arg, warn });
    if (typeof opened === "string") return fail(opened);
    outputs = opened;
    if (hideTicks) config.enableTickEvents = true;
  }
  const options = { image, config };
  const session = new FlowSession(output, out, new PtEvent());
  if (sideband.channels.length > 0) {
    const { openSideband } = await import("./sideband.js");
    const sb = openSideband(io, out, sideband, "flow", kernel);
    if (typeof sb === "string") return fail(sb);
    session.sideband = { session: sb, options: sideband };
  }
  const walker = new CodeWalker();
  const decode =
    pt.step.decoder === "insn"
      ? new InsnUnit(new InsnDecoder(pt.trace, options), session, walker)
      : new BlockUnit(new BlockDecoder(pt.trace, options), session, walker);
  if (outputs) {
    const { AnalysisUnit } = await import("./analysis-unit.js");
    session.run(new AnalysisUnit(decode, session, walker, outputs.stream(), hideTicks));
  } else session.run(decode);
  if (output.stats) {
    const insn = output.statInsn ? session.insnCount : undefined;
    const blocks = output.statBlocks ? session.blockCount : undefined;
    for (const line of statsText(insn, blocks)) out.line(line);
  }
  out.flush();
  // ptxed prints nothing for a file without PSB; say what it looks like instead.
  if (session.noPsb) return fail(`${noPsbHint(io, pt.path)}.`);
  const problem = outputs?.finish();
  return problem ? fail(problem) : 0;
}

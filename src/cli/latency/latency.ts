/**
 * `ptkit latency`: exact call durations per function, printed. Options and wiring
 * only: the decode is `ptkit perf`'s (a perf.data file) or `ptkit flow`'s (a raw trace
 * at --pt), run quiet with the report asked of its analysis outputs
 * (analysis-outputs.ts: the analysis layer's CallLatency and its writers).
 *
 * What those commands print while decoding (errors in the trace, warnings) goes to
 * stderr, so that stdout holds the report alone (`--json` can be piped); their messages
 * are worded as this command's.
 */
import { immediate } from "../../analysis/export/byte-chunks.js";
import { DEFAULT_SLOWEST } from "../../analysis/latency.js";
import type { LatencyReport } from "../../session/analysis-options.js";
import { fileKind, isSureKind, notATraceHint, readHead } from "../../session/file-kind.js";
import { type SessionIo, writeStdoutBytes } from "../../session/io.js";
import { expandArgFiles } from "../arg-files.js";
import { FLOW_HINTS } from "../session-hints.js";
import { LATENCY_HELP } from "./help.js";

/** The most slowest calls `--top` may ask for (each is kept with its stack). */
const MAX_TOP = 1_000_000;

interface LatencyArgs {
  json: boolean;
  top: number;
  only: string | undefined;
  /** The perf or flow options and the input. */
  rest: string[];
}

/** This command's own options taken out of `words`: the rest is the decode's; "help", or an error message. */
function parse(words: readonly string[]): LatencyArgs | "help" | string {
  const args: LatencyArgs = { json: false, top: DEFAULT_SLOWEST, only: undefined, rest: [] };
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const value = words[i + 1];
    if (w === "--") {
      args.rest.push(...words.slice(i));
      break;
    }
    if (w === "-h" || w === "--help") return "help";
    if (w === "--json") args.json = true;
    else if (w === "--top" || w === "--function") {
      if (value === undefined || value === "" || value.startsWith("--")) return `${w}: missing argument.`;
      i++;
      if (w === "--function") args.only = value;
      else if (!/^\d+$/.test(value) || Number(value) > MAX_TOP)
        return `--top: want a number of calls from 0 to ${MAX_TOP}: ${value}.`;
      else args.top = Number(value);
    } else args.rest.push(w);
  }
  return args;
}

/** `io` for the decode: what it prints goes to stderr, its messages named as this command's. */
function decodeIo(io: SessionIo): SessionIo {
  const reword = (text: string) => text.replace(/^ptkit (perf|flow):/gm, "ptkit latency:");
  return {
    ...io,
    stdout: (text) => io.stderr(reword(text)),
    stdoutBytes: undefined,
    stderr: (text) => io.stderr(reword(text)),
  };
}

/** Why `input` cannot be the perf.data file to decode, when its first bytes say so. */
function inputProblem(io: SessionIo, input: string): string | undefined {
  if (input === "-") return undefined;
  const kind = fileKind(readHead(io, input));
  if (!isSureKind(kind) || kind === "perf") return undefined;
  if (kind === "trace")
    return `${input} is a raw Intel PT trace: give its code too, as ptkit flow takes it: ptkit latency --elf <program> --pt ${input}.`;
  return `${notATraceHint(input, kind!, FLOW_HINTS)}.`;
}

export async function runLatency(argv: readonly string[], io: SessionIo): Promise<number> {
  const fail = (message: string, usage = false): number => {
    io.stderr(`ptkit latency: ${message}\n${usage ? "Use --help or -h for help.\n" : ""}`);
    return 1;
  };
  const words = expandArgFiles(io, argv);
  if (typeof words === "string") return fail(words);
  const args = parse(words);
  if (args === "help") {
    io.stdout(LATENCY_HELP);
    return 0;
  }
  if (typeof args === "string") return fail(args, true);
  const report: LatencyReport = {
    json: args.json,
    slowest: args.top,
    only: args.only,
    out: immediate((chunk) => writeStdoutBytes(io, chunk)),
  };
  const quiet = decodeIo(io);
  if (args.rest.includes("--pt")) {
    const { runFlow } = await import("../flow/flow.js");
    return runFlow(["--quiet", ...args.rest], quiet, {}, report);
  }
  const input = args.rest.at(-1);
  if (input === undefined || (input.startsWith("-") && input !== "-"))
    return fail("expected a perf.data file, or a raw trace at --pt with its code (--elf, --raw).", true);
  const problem = inputProblem(io, input);
  if (problem !== undefined) return fail(problem);
  const { runPerf } = await import("../perf/perf.js");
  return runPerf(["-q", ...args.rest], quiet, undefined, {}, report);
}

/** `ptkit demo` (what `npm start` runs): decode the bundled sample and summarise it. */

import { join } from "node:path";
import { parseArgs } from "node:util";
import { Symbolizer, SymbolTable } from "../../analysis/index.js";
import { diagnosticLine } from "../../base/diagnostic.js";
import { ElfError, Image, tryParseElf } from "../../image/index.js";
import { collectStats } from "../../packet/stats.js";
import { AnalysisOutputs, defaultAnalysisOptions } from "../../session/analysis-outputs.js";
import type { SessionIo } from "../../session/io.js";
import { Progress } from "../progress.js";
import { decodeTrace } from "./decode.js";
import { BUNDLED_SAMPLE, loadSample, type Sample } from "./sample.js";
import { type DemoResult, demoJson, demoText } from "./text.js";

const USAGE = "usage: ptkit demo [--sample <dir>] [-o <timeline.json>] [--no-timeline] [--json] [--top <n>]";

const HELP = `${USAGE}

Decode the sample that ships with ptkit (sample/: a small C program and its Intel
PT trace, made by ptkit's model of the trace unit from a valgrind run) with ptkit's
own decoder, and summarise it: what was decoded, the hottest functions, the call
depth, the time span and the decode speed. It also writes a function-call timeline
(Chrome trace-event JSON): open https://ui.perfetto.dev and drag the file in.
'npm start' runs it.

options:
  --sample DIR        a sample directory with a sample.json (default: the bundled one,
                      ${BUNDLED_SAMPLE}).
  -o, --output FILE   the timeline file (default sample-timeline.json).
  --no-timeline       write no timeline.
  --json              print the summary as one JSON object (every function).
  --top N             list the N hottest functions (default 10).
  -h, --help          this text.

examples:
  ptkit demo
  ptkit demo --top 5 -o /tmp/timeline.json
  ptkit demo --json | jq .profile.functions
  npm start
`;

export function runDemo(argv: readonly string[], io: SessionIo): number {
  let values: ReturnType<typeof parseDemoArgs>["values"];
  try {
    const parsed = parseDemoArgs(argv);
    if (parsed.positionals.length > 0) throw new Error(`unexpected argument '${parsed.positionals[0]}'`);
    values = parsed.values;
  } catch (e) {
    io.stderr(`ptkit demo: ${(e as Error).message}.\n${USAGE}\nUse --help or -h for help.\n`);
    return 1;
  }
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  const top = Number(values.top ?? 10);
  if (!Number.isInteger(top) || top < 0) {
    io.stderr(`ptkit demo: --top: '${values.top}' is not a count.\n`);
    return 1;
  }
  const timeline = values["no-timeline"] ? undefined : (values.output ?? "sample-timeline.json");
  const result = demo(io, values.sample ?? BUNDLED_SAMPLE, timeline);
  if (typeof result === "string") {
    io.stderr(`ptkit demo: ${result}.\n`);
    return 1;
  }
  io.stdout(values.json ? `${JSON.stringify(demoJson(result))}\n` : demoText(result, top, io.cwd));
  return 0;
}

function parseDemoArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      sample: { type: "string" },
      output: { type: "string", short: "o" },
      "no-timeline": { type: "boolean" },
      json: { type: "boolean" },
      top: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

/** Decode the sample in `dir` (and write the timeline); a message when that cannot be done. */
function demo(io: SessionIo, dir: string, timeline: string | undefined): DemoResult | string {
  const sample = loadSample(io, dir);
  if (typeof sample === "string") return sample;
  const elf = tryParseElf(sample.elfBytes);
  if (elf instanceof ElfError) return diagnosticLine(sample.program, elf);
  const image = new Image();
  image.addElf(elf, { name: sample.program, zeroFill: false });
  const symbols = new Symbolizer();
  symbols.add(new SymbolTable(elf, { name: sample.program }));
  const stats = collectStats(sample.traceBytes);
  let outputs = timeline === undefined ? undefined : openTimeline(io, sample, timeline);
  if (typeof outputs === "string") {
    // The summary is the main thing: give it without the timeline.
    io.stderr(
      `ptkit demo: ${outputs} The summary follows without a timeline; -o <file> writes it elsewhere.\n`,
    );
    outputs = undefined;
    timeline = undefined;
  }
  // The timeline's calls are timed by MTC and CYC through tick events.
  const config = outputs === undefined ? sample.config : { ...sample.config, enableTickEvents: true };
  const progress = new Progress(io, "decoding", sample.traceBytes.length);
  const decode = decodeTrace(
    sample.traceBytes,
    image,
    config,
    symbols,
    (at) => progress.update(at),
    outputs?.stream(),
  );
  progress.done();
  const problem = outputs?.finish();
  if (problem !== undefined) return problem;
  return { sample, stats, decode, timeline };
}

/** The analysis outputs that write the function-call timeline, or an error message. */
function openTimeline(io: SessionIo, sample: Sample, path: string): AnalysisOutputs | string {
  const nomFreq = sample.config.nomFreq;
  return AnalysisOutputs.open(
    io,
    { ...defaultAnalysisOptions(), timeline: path },
    // The TSC runs at nomFreq × 100 MHz: 10 / nomFreq ns per tick.
    {
      code: [{ kind: "elf", file: { name: join(sample.dir, sample.program), base: undefined } }],
      nsPerTick: nomFreq > 0 ? 10 / nomFreq : 0,
      name: sample.program,
    },
  );
}

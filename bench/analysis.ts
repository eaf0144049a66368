/**
 * The analysis benchmark: what call stacks and exports cost on top of decoding.
 *
 * The trace is the trace-unit model's of the generation benchmark's workload (gzip
 * under valgrind lackey) with timing packets (TSC, MTC, CYC), decoded by the block
 * decoder with tick events on, as `ptkit flow --timeline` decodes. Each block's
 * instructions reach the analysis through the same block replay `ptkit flow` uses
 * (src/session/analysis-blocks.ts: with call stacks alone, the instructions that move the
 * stack one by one and the runs between them in one step); frame names come from the
 * workload's own symbol tables. Rows: decoding alone, then with call stacks and no
 * output, with the Chrome trace-event timeline (its text produced and dropped), and
 * with time-weighted folded stacks. Every row must decode the same instructions.
 */
import { readFileSync } from "node:fs";
import {
  CallAnalysis,
  type CallSink,
  FoldedStacks,
  FrameNames,
  Symbolizer,
  SymbolTable,
  TimelineWriter,
} from "../src/analysis/index.js";
import { ErrorCode } from "../src/base/errors.js";
import { type DecoderConfig, defaultDecoderConfig, PtEvent, Status } from "../src/event/index.js";
import { Block, BlockDecoder } from "../src/flow/index.js";
import { type Image, parseElf } from "../src/image/index.js";
import { BlockInsns } from "../src/session/analysis-blocks.js";
import { CodeWalker } from "../src/session/flow-walk.js";
import { ProcessImage } from "../src/unit/exec/process-image.js";
import { GENERATE_CONFIGS, generateTrace, loadWorkload, type MappedObject } from "./generate.js";
import { bestOf, mPerSec } from "./timing.js";

export interface AnalysisRow {
  what: string;
  insns: number;
  bestNs: number;
  runsNs: number[];
  mInsnPerSec: number;
  /** Timeline bytes written, for the timeline row. */
  outputBytes?: number;
}

export interface AnalysisBench {
  workload: string;
  traceBytes: number;
  /** Frames (calls, interrupts) and markers in the timeline. */
  timelineEvents: number;
  rows: AnalysisRow[];
}

/** The timing configuration of the generation benchmark, and what decoding it needs (the model's Skylake). */
const TIMED = GENERATE_CONFIGS.find((c) => c.options.includes("--cyc"))!;
const TIME_CONFIG = { mtcFreq: 3, nomFreq: 37, cpuid15Eax: 2, cpuid15Ebx: 308 };

/** Decode `trace`, feeding every instruction and event to a fresh analysis with `sinks` (none: decode only). */
function pass(
  trace: Uint8Array,
  image: Image,
  config: DecoderConfig,
  sinks: CallSink[] | undefined,
  finish: () => void,
): number {
  const dec = new BlockDecoder(trace, { image, config });
  const block = new Block();
  const ev = new PtEvent();
  const analysis = sinks ? new CallAnalysis({ sinks, nsPerTick: 10 / TIME_CONFIG.nomFreq }) : undefined;
  const feed = analysis?.stream("gzip");
  const blocks = new BlockInsns(new CodeWalker());
  let insns = 0;
  for (;;) {
    let status = dec.syncForward();
    if (status < 0) break;
    for (;;) {
      while (status >= 0 && status & Status.EventPending) {
        status = dec.event(ev);
        if (status >= 0) feed?.event(ev);
      }
      if (status < 0 || status & Status.Eos) break;
      status = dec.next(block);
      insns += block.ninsn;
      if (feed && block.ninsn > 0) blocks.feed(block, dec.image, feed);
      if (status < 0) break;
    }
    if (status >= 0 || status === -ErrorCode.Eos) break;
    feed?.error(dec.offset, "decode error");
  }
  analysis?.finish();
  finish();
  return insns;
}

function symbolsOf(objects: MappedObject[]): Symbolizer {
  const symbols = new Symbolizer();
  for (const o of objects)
    symbols.add(
      new SymbolTable(parseElf(new Uint8Array(readFileSync(o.path))), { name: o.path, bias: BigInt(o.bias) }),
    );
  return symbols;
}

/** Run the benchmark; `{ skip }` when the workload cannot be made here. */
export function measureAnalysis(options: { runs?: number } = {}): AnalysisBench | { skip: string } {
  const runs = options.runs ?? 5;
  const workload = loadWorkload();
  if ("skip" in workload) return workload;
  const trace = generateTrace(workload.execution, TIMED.options);
  const processImage = new ProcessImage((path) => new Uint8Array(readFileSync(path)));
  for (const o of workload.objects) processImage.map(o.path, BigInt(o.bias));
  const image = processImage.image;
  const config = { ...defaultDecoderConfig(), ...TIME_CONFIG, enableTickEvents: true };
  const names = new FrameNames(symbolsOf(workload.objects));

  let outputBytes = 0;
  const time = (
    what: string,
    sinks: () => CallSink[] | undefined,
    finish: () => void = () => {},
  ): AnalysisRow => {
    let insns = 0;
    const t = bestOf(runs, () => {
      outputBytes = 0;
      insns = pass(trace, image, config, sinks(), finish);
      return insns;
    });
    return { what, insns, bestNs: t.bestNs, runsNs: t.runsNs, mInsnPerSec: mPerSec(insns, t.bestNs) };
  };
  const rows = [
    time("decode only (block decoder, tick events)", () => undefined),
    time("+ call stacks", () => []),
  ];
  let writer: TimelineWriter | undefined;
  const timeline = time("+ timeline (Chrome trace-event JSON)", () => {
    writer = new TimelineWriter((chunk) => {
      outputBytes += chunk.length;
    }, names);
    return [writer];
  });
  timeline.outputBytes = outputBytes;
  rows.push(timeline);
  let folded: FoldedStacks | undefined;
  rows.push(
    time(
      "+ folded stacks (time-weighted)",
      () => {
        folded = new FoldedStacks(names);
        return [folded];
      },
      () => folded?.write(() => {}, "time"),
    ),
  );
  for (const r of rows)
    if (r.insns !== rows[0]!.insns)
      throw new Error(`${r.what} decoded ${r.insns} instructions, not ${rows[0]!.insns}`);
  return { workload: workload.name, traceBytes: trace.length, timelineEvents: writer?.events ?? 0, rows };
}

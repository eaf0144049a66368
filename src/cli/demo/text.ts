/** What `ptkit demo` prints: the summary as text or as one JSON object. */
import { isAbsolute, join, relative } from "node:path";
import type { TraceStats } from "../../packet/stats.js";
import type { TraceDecode } from "./decode.js";
import type { Sample } from "./sample.js";

export interface DemoResult {
  sample: Sample;
  stats: TraceStats;
  decode: TraceDecode;
  /** The timeline file written, if any. */
  timeline: string | undefined;
}

const num = (n: number) => n.toLocaleString("en-US");

/** TSC ticks between the first and the last timed event, and their length in µs. */
function timeSpan(r: DemoResult): { ticks: number; microseconds: number | undefined } | undefined {
  const { firstTsc, lastTsc } = r.decode;
  if (firstTsc === undefined || lastTsc === undefined) return undefined;
  const ticks = Number(lastTsc - firstTsc);
  const nom = r.sample.config.nomFreq;
  // The TSC runs at the nominal frequency, nomFreq × 100 MHz.
  return { ticks, microseconds: nom > 0 ? ticks / (nom * 100) : undefined };
}

export function demoJson(r: DemoResult): object {
  const d = r.decode;
  const span = timeSpan(r);
  return {
    sample: {
      dir: r.sample.dir,
      program: r.sample.program,
      trace: r.sample.trace,
      traceBytes: r.sample.traceBytes.length,
    },
    packets: r.stats.packets,
    psbs: r.stats.psbOffsets.length,
    profile: d.profile,
    errors: d.errors,
    time:
      span === undefined
        ? null
        : { firstTsc: `0x${d.firstTsc!.toString(16)}`, lastTsc: `0x${d.lastTsc!.toString(16)}`, ...span },
    seconds: d.seconds,
    timeline: r.timeline ?? null,
  };
}

export function demoText(r: DemoResult, top: number, cwd: string): string {
  const { sample, stats, decode } = r;
  const p = decode.profile;
  // Paths as short as they can be: relative below the current directory, else absolute.
  const at = (name: string) => {
    const rel = relative(cwd, join(sample.dir, name));
    return rel.startsWith("..") || isAbsolute(rel) ? join(sample.dir, name) : rel;
  };
  const branches = p.conditional + p.jumps + p.calls + p.returns + p.far;
  const span = timeSpan(r);
  const seconds = decode.seconds;
  const lines = [
    "ptkit demo: the bundled sample, decoded by ptkit's own decoder",
    "",
    `  program     ${at(sample.program)}: ${sample.source} compiled freestanding, ${num(sample.elfBytes.length)} bytes`,
    `  trace       ${at(sample.trace)}: ${num(sample.traceBytes.length)} bytes, ${num(stats.packets)} packets, ` +
      `${stats.psbOffsets.length} PSB segments`,
    `              made by ptkit's model of the trace unit (${sample.cpu}, IA32_RTIT_CTL ${sample.ctl})`,
    `  decoded     ${num(p.instructions)} instructions in ${p.functions.length} functions, ` +
      `${decode.errors.length} errors`,
    `  branches    ${num(branches)}: ${num(p.conditional)} conditional, ${num(p.calls)} calls, ` +
      `${num(p.returns)} returns, ${num(p.jumps)} jumps, ${num(p.far)} far (system calls)`,
    `  call depth  ${p.maxDepth}${p.deepest ? ` (deepest in ${p.deepest})` : ""}`,
    span === undefined
      ? "  time span   unknown (no timing packets)"
      : `  time span   ${span.microseconds === undefined ? "" : `${span.microseconds.toFixed(1)} µs, `}` +
        `${num(span.ticks)} TSC ticks`,
    `  decode      ${(seconds * 1000).toFixed(1)} ms${r.timeline === undefined ? "" : " (with the timeline)"}: ` +
      `${seconds > 0 ? (p.instructions / 1e6 / seconds).toFixed(2) : "-"} M instructions/s ` +
      "(mostly start-up at this size; see npm run bench)",
  ];
  for (const e of decode.errors.slice(0, 5))
    lines.push(`  error       [${e.offset.toString(16)}: ${e.message}]`);
  lines.push("", "hottest functions (instructions in the function itself):");
  lines.push(
    `  ${"function".padEnd(18)}${"instructions".padStart(14)}${"%".padStart(8)}${"calls".padStart(9)}`,
  );
  for (const f of p.functions.slice(0, top)) {
    const pct = p.instructions > 0 ? ((100 * f.insns) / p.instructions).toFixed(1) : "0.0";
    lines.push(
      `  ${f.name.padEnd(18)}${num(f.insns).padStart(14)}${pct.padStart(8)}${num(f.calls).padStart(9)}`,
    );
  }
  lines.push("");
  if (r.timeline !== undefined)
    lines.push(`timeline: ${r.timeline}; open https://ui.perfetto.dev and drag ${r.timeline} in.`, "");
  const next = [
    [`ptkit flow --elf ${at(sample.program)} --pt ${at(sample.trace)}`, "every instruction"],
    [`ptkit dump ${at(sample.trace)}`, "every packet"],
    ["ptkit demo --help", "options"],
  ];
  const width = Math.max(...next.map(([c]) => c!.length)) + 4;
  lines.push("next:", ...next.map(([c, what]) => `  ${c!.padEnd(width)}${what}`));
  return `${lines.join("\n")}\n`;
}

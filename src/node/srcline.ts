/**
 * Source lines for code addresses through an installed tool: llvm-symbolizer or
 * binutils' addr2line (both optional). One process per batch of addresses (they are
 * read from stdin), the answers cached per file and address, so a trace's millions
 * of instructions cost one spawn per module and batch.
 *
 * Addresses are the file's own (link-time, as in its ELF headers): subtract the load
 * bias of a PIE or shared object first.
 */
import { lazyBuiltin } from "./lazy-builtin.js";

const childProcess = lazyBuiltin<typeof import("node:child_process")>("node:child_process");

/** One source frame; at an inlined call, the innermost (the inlined code) comes first. */
export interface SourceFrame {
  /** The function, demangled by the tool; `??` when unknown. */
  func: string;
  /** The source file; `??` when unknown. */
  file: string;
  /** 1-based; 0 when unknown. */
  line: number;
}

export type SourceLineTool = "llvm-symbolizer" | "addr2line";

export const SOURCE_LINE_TOOLS: readonly SourceLineTool[] = ["llvm-symbolizer", "addr2line"];

/** What to install for source lines. */
export const SOURCE_LINE_HINT = "install binutils (addr2line) or llvm (llvm-symbolizer)";

/** Addresses per spawned process: bounds the input and output held at once. */
const BATCH = 20_000;

/** Whether `tool` runs. */
export function toolRuns(tool: string): boolean {
  const r = childProcess().spawnSync(tool, ["--version"], { stdio: "ignore" });
  return !r.error && r.status === 0;
}

/** The preferred tool that is installed (llvm-symbolizer first: faster, newer DWARF), or undefined. */
export function findSourceLineTool(): SourceLineTool | undefined {
  return SOURCE_LINE_TOOLS.find(toolRuns);
}

/** The command line for a batch of `file`'s addresses. */
function toolArgs(tool: SourceLineTool, file: string): string[] {
  return tool === "addr2line"
    ? ["-e", file, "-f", "-i", "-C", "-a"]
    : [`--obj=${file}`, "--inlines", "--demangle", "--output-style=JSON"];
}

/** `file:line`, `file:line (discriminator 3)` or `??:0` / `??:?` as addr2line prints them. */
function parseLocation(text: string): { file: string; line: number } {
  const m = /^(.*):(\d+|\?)(?: \(discriminator \d+\))?$/.exec(text);
  if (!m) return { file: text || "??", line: 0 };
  return { file: m[1] || "??", line: m[2] === "?" ? 0 : Number(m[2]) };
}

/** addr2line -f -i -a output: per address a `0x...` line, then function and location pairs. */
export function parseAddr2line(text: string, count: number): SourceFrame[][] {
  const out: SourceFrame[][] = [];
  const lines = text.split("\n");
  let k = 0;
  while (k < lines.length && out.length < count) {
    if (!/^0x[0-9a-f]+$/i.test(lines[k]!)) {
      k++;
      continue;
    }
    k++;
    const frames: SourceFrame[] = [];
    while (k + 1 < lines.length && !/^0x[0-9a-f]+$/i.test(lines[k]!)) {
      const loc = parseLocation(lines[k + 1]!);
      frames.push({ func: lines[k]!, ...loc });
      k += 2;
    }
    out.push(frames.length === 1 && frames[0]!.line === 0 && frames[0]!.func === "??" ? [] : frames);
  }
  return out;
}

interface JsonFrame {
  FunctionName?: string;
  FileName?: string;
  Line?: number;
}

/** llvm-symbolizer --output-style=JSON: one JSON object per address and line. */
export function parseLlvmJson(text: string, count: number): SourceFrame[][] {
  const out: SourceFrame[][] = [];
  for (const line of text.split("\n")) {
    if (out.length === count) break;
    if (!line.startsWith("{")) continue;
    let frames: SourceFrame[] = [];
    try {
      const obj = JSON.parse(line) as { Symbol?: JsonFrame[] };
      frames = (obj.Symbol ?? [])
        .filter((f) => f.FunctionName || f.FileName)
        .map((f) => ({ func: f.FunctionName || "??", file: f.FileName || "??", line: f.Line ?? 0 }));
    } catch {
      // a line the tool garbled: no frames for this address
    }
    out.push(frames);
  }
  return out;
}

/** Runs a tool with `input` on stdin; returns stdout or an error message. */
export type ToolRunner = (
  tool: string,
  args: readonly string[],
  input: string,
) => { stdout: string } | string;

function spawnTool(tool: string, args: readonly string[], input: string): { stdout: string } | string {
  const r = childProcess().spawnSync(tool, args, { input, encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error) return `${tool} failed to run: ${r.error.message}`;
  if (r.status !== 0) return `${tool} exited with status ${r.status}: ${r.stderr.trim()}`;
  return { stdout: r.stdout };
}

/** Source frames for addresses of ELF files, through one tool, cached per file and address. */
export class SourceLines {
  private readonly cache = new Map<string, Map<bigint, SourceFrame[]>>();

  constructor(
    readonly tool: SourceLineTool,
    private readonly run: ToolRunner = spawnTool,
  ) {}

  /** Frames for each address of `file` (an empty list where the tool knows nothing), or an error message. */
  lookup(file: string, addrs: readonly bigint[]): SourceFrame[][] | string {
    let known = this.cache.get(file);
    if (!known) {
      known = new Map();
      this.cache.set(file, known);
    }
    const missing = [...new Set(addrs.filter((a) => !known.has(a)))];
    for (let at = 0; at < missing.length; at += BATCH) {
      const batch = missing.slice(at, at + BATCH);
      const input = `${batch.map((a) => `0x${a.toString(16)}`).join("\n")}\n`;
      const r = this.run(this.tool, toolArgs(this.tool, file), input);
      if (typeof r === "string") return r;
      const frames =
        this.tool === "addr2line"
          ? parseAddr2line(r.stdout, batch.length)
          : parseLlvmJson(r.stdout, batch.length);
      if (frames.length !== batch.length) {
        return `${this.tool} answered ${frames.length} of ${batch.length} addresses of ${file}`;
      }
      for (let k = 0; k < batch.length; k++) known.set(batch[k]!, frames[k]!);
    }
    return addrs.map((a) => known.get(a)!);
  }
}

/**
 * Call latencies ({@link LatencySummary}) as a text report (a HASE capture's):
 * ```
 * 19 calls returned in 20 functions; 7 frames incomplete (end 7): not measured
 * durations in ns; percentiles nearest-rank over every call that returned (exact, not sampled)
 * off-CPU time: unknown (no thread was seen switched out: context switches were not recorded)
 *
 * calls  total   p50   p90   p99   max  incomplete  function
 *     1   4403  4403  4403  4403  4403           0  __init_libc
 *     1   4403  4403  4403  4403  4403              <- __libc_start_main
 *     ...
 *     0      0     -     -     -     -           1  main
 *
 * slowest calls (up to 20):
 * duration  start  thread                    function
 *     4403   8475  control_flow 11181/11181  __init_libc
 *                                            _start > _start_c > __libc_start_main > __init_libc
 * ```
 * Functions come largest total first; under each, its callers (`<-`, the largest total
 * first, up to {@link TOP_CALLERS}; `<- [bottom]` for frames at the bottom of a stack).
 * Names come last, so long (C++) names do not push the columns apart. When threads
 * were seen switched out, an off-CPU column is added (time switched out within the
 * calls, added up). A function whose name appears in more than one process image is
 * followed by `[pid N]`.
 */
import type { ClockUnit } from "../callstack-sink.js";
import type { FunctionLatency, LatencySummary } from "../latency.js";
import type { DurationStats } from "../latency-stats.js";
import { ByteChunks, type ChunkOut } from "./byte-chunks.js";

/** Callers listed under each function. */
export const TOP_CALLERS = 3;

const UNIT_TEXT: Record<ClockUnit, string> = {
  ns: "durations in ns",
  tsc: "durations in TSC ticks (the TSC frequency is unknown)",
  insn: "durations in instructions (the trace has no timing)",
};

const num = (v: number) => (Number.isFinite(v) ? String(v) : "-");

/**
 * Rows of cells in columns two spaces apart: numbers right-aligned to the widest cell
 * of their column, the last `left` columns (text) left-aligned; the last one is not
 * padded (names, stacks).
 */
function table(rows: readonly string[][], left = 1): string {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  return rows
    .map((row) =>
      row
        .map((cell, i) =>
          i === row.length - 1
            ? cell
            : i >= row.length - left
              ? cell.padEnd(widths[i]!)
              : cell.padStart(widths[i]!),
        )
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/**
 * The functions' table as {@link table} lays it out (the same bytes), each row written
 * in place: its numbers' widths are counted first, and no cell becomes a string (the
 * bench perf.data's 52k functions and 140k rows: ~1.1 million cells).
 */
function writeFunctions(t: ByteChunks, fns: readonly FunctionLatency[], recorded: boolean): void {
  const names = new Map<string, number>();
  for (const f of fns) names.set(f.name, (names.get(f.name) ?? 0) + 1);
  const label = (f: FunctionLatency) => ((names.get(f.name) ?? 0) > 1 ? `${f.name} [pid ${f.pid}]` : f.name);
  const head = ["calls", "total", "p50", "p90", "p99", "max", ...(recorded ? ["off-CPU"] : []), "incomplete"];
  // A row's numbers: the statistics' six, then (a function's) off-CPU and incomplete.
  const row = new Array<number | undefined>(head.length);
  const stats = (s: DurationStats) => {
    row[0] = s.calls;
    row[1] = s.total;
    row[2] = s.p50;
    row[3] = s.p90;
    row[4] = s.p99;
    row[5] = s.max;
  };
  // The number columns' widths: the head's, each function's and its listed callers'.
  const widths = head.map((h) => h.length);
  const widen = (last: number) => {
    for (let i = 0; i < last; i++) {
      const n = numLength(row[i]!);
      if (n > widths[i]!) widths[i] = n;
    }
  };
  for (const f of fns) {
    stats(f);
    if (recorded) row[6] = f.offCpu;
    row[head.length - 1] = f.incomplete;
    widen(head.length);
    for (let i = 0; i < TOP_CALLERS && i < f.callers.length; i++) {
      stats(f.callers[i]!);
      widen(6);
    }
  }
  // A row: its numbers right-aligned, then `text` (unpadded); as table() writes it, the
  // line trimmed at its end (only text that is empty or ends in a blank leaves any).
  const write = (values: readonly (number | undefined)[], text: string) => {
    const c = text.length === 0 ? 0 : text.charCodeAt(text.length - 1);
    if (c <= 0x20 || (c >= 0xa0 && /\s$/.test(text))) {
      const padded = values.map((v, i) => (v === undefined ? "" : num(v)).padStart(widths[i]!));
      t.text([...padded, text].join("  ").trimEnd());
    } else {
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        for (let k = v === undefined ? 0 : numLength(v); k < widths[i]!; k++) t.byte(0x20);
        if (v !== undefined) putNum(t, v);
        t.byte(0x20);
        t.byte(0x20);
      }
      t.text(text);
    }
    t.byte(0x0a);
  };
  t.text(head.map((h, i) => h.padStart(widths[i]!)).join("  "));
  t.text("  function\n");
  for (const f of fns) {
    stats(f);
    if (recorded) row[6] = f.offCpu;
    row[head.length - 1] = f.incomplete;
    write(row, label(f));
    for (let i = 0; i < TOP_CALLERS && i < f.callers.length; i++) {
      const c = f.callers[i]!;
      stats(c);
      if (recorded) row[6] = undefined;
      row[head.length - 1] = undefined;
      write(row, `<- ${c.caller ?? "[bottom]"}`);
    }
    const more = f.callers.length - TOP_CALLERS;
    if (more > 0) {
      row.fill(undefined);
      write(row, `<- ${more} more caller${more === 1 ? "" : "s"}`);
    }
  }
}

/** How many characters {@link num} writes for `v`. */
function numLength(v: number): number {
  if (!Number.isFinite(v)) return 1;
  if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && Number.isInteger(v))) return String(v).length;
  let n = 1;
  for (let p = 10; p <= v; p *= 10) n++;
  return n;
}

/** {@link num} into `t`. */
function putNum(t: ByteChunks, v: number): void {
  if (Number.isFinite(v)) t.int(v);
  else t.byte(0x2d);
}

export function writeLatencyText(summary: LatencySummary, out: ChunkOut): void {
  const t = new ByteChunks(out);
  const recorded = summary.offCpuRecorded;
  const fns = summary.functions;
  const ends = Object.entries(summary.incompleteBy)
    .filter(([, n]) => n > 0)
    .map(([how, n]) => `${how} ${n}`);
  const what = summary.only === undefined ? "" : `function ${summary.only}: `;
  const listed = fns.reduce((n, f) => n + f.calls, 0);
  const incomplete = fns.reduce((n, f) => n + f.incomplete, 0);
  t.text(
    `${what}${listed} call${listed === 1 ? "" : "s"} returned in ${fns.length} function${fns.length === 1 ? "" : "s"}`,
  );
  if (summary.only === undefined && incomplete > 0)
    t.text(
      `; ${incomplete} frame${incomplete === 1 ? "" : "s"} incomplete (${ends.join(", ")}): not measured`,
    );
  else if (incomplete > 0)
    t.text(`; ${incomplete} frame${incomplete === 1 ? "" : "s"} incomplete: not measured`);
  t.text("\n");
  t.text(
    `${UNIT_TEXT[summary.clock.unit]}; percentiles nearest-rank over every call that returned (exact, not sampled)\n`,
  );
  t.text(
    recorded
      ? "off-CPU: time the thread was switched out during the calls, added up\n"
      : "off-CPU time: unknown (no thread was seen switched out: context switches were not recorded)\n",
  );
  if (fns.some((f) => f.callers.some((c) => c.caller === f.name)))
    t.text(
      "recursion: every frame is a call, so a function's total holds its inner calls inside its outer ones\n",
    );
  t.byte(0x0a);
  writeFunctions(t, fns, recorded);
  if (summary.slowest.length === 0) {
    t.flush();
    return;
  }
  t.text(`\nslowest calls (up to ${summary.slowestKept}):\n`);
  const slow: string[][] = [["duration", "start", ...(recorded ? ["off-CPU"] : []), "thread", "function"]];
  for (const s of summary.slowest) {
    const thread = `${s.thread === "" ? "" : `${s.thread} `}${s.pid}/${s.tid}`;
    slow.push([num(s.duration), num(s.start), ...(recorded ? [num(s.offCpu)] : []), thread, s.name]);
    // The stack on a row of its own, under the function.
    slow.push([...slow[0]!.slice(0, -1).map(() => ""), s.stack.join(" > ")]);
  }
  t.text(`${table(slow, 2)}\n`);
  t.flush();
}

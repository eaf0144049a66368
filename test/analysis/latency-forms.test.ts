/**
 * The latency report's JSON and text forms on arbitrary summaries (fast-check): the
 * JSON parses to the summary's values (NaN as null), and the text's table of functions
 * is laid out as a table of the cells as strings would be (right-aligned numbers, `-`
 * for none, the name last, each line trimmed at its end): names that are empty, end
 * in blanks or need JSON escapes, numbers that are negative, fractional or past 2^53.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  type CallerLatency,
  type FunctionLatency,
  type LatencySummary,
  writeLatencyJson,
  writeLatencyText,
} from "../../src/analysis/index.js";
import { Chunks } from "./chunks.js";

const number = fc.oneof(
  fc.nat({ max: 1000 }),
  fc.maxSafeNat(),
  fc.constantFrom(Number.NaN, -1, -7.5, 0.25, 2 ** 60, Number.POSITIVE_INFINITY),
);
const name = fc.oneof(
  fc.constantFrom("main", "", " ", "f ", "g\u3000", 'q"\\x', "\u00e9t\u00e9", "a;b", "t\t"),
  fc.string({ maxLength: 6 }),
);
/** Counts and sums are numbers (JSON writes them as they are); a statistic of no call is NaN. */
const finite = fc.oneof(fc.nat({ max: 1000 }), fc.maxSafeNat(), fc.constantFrom(-1, -7.5, 0.25, 2 ** 60));
const count = fc.oneof(fc.nat({ max: 1000 }), fc.maxSafeNat());
const stats = {
  calls: count,
  total: finite,
  min: number,
  p50: number,
  p90: number,
  p99: number,
  max: number,
};
const caller: fc.Arbitrary<CallerLatency> = fc.record({ caller: fc.option(name, { nil: null }), ...stats });
const fn: fc.Arbitrary<FunctionLatency> = fc.record({
  name,
  pid: fc.integer({ min: -1, max: 99999 }),
  ...stats,
  incomplete: count,
  offCpu: finite,
  callers: fc.array(caller, { maxLength: 5 }),
  histogram: fc.array(fc.record({ from: count, to: count, count }), { maxLength: 3 }),
});
const summary: fc.Arbitrary<LatencySummary> = fc.record({
  clock: fc.constant({ unit: "ns" as const, tscBase: "0x10", nsPerTick: 0.5 }),
  calls: fc.nat(),
  incomplete: fc.nat(),
  incompleteBy: fc.constant({ unwind: 0, end: 1 }),
  offCpuRecorded: fc.boolean(),
  only: fc.constant(undefined),
  functions: fc.array(fn, { maxLength: 8 }),
  slowestKept: fc.constant(20),
  slowest: fc.constant([]),
});

/** A function's or caller's statistics. */
type Stats = Omit<CallerLatency, "caller">;

/** A number as both forms write it: JSON's null, the text's `-`. */
const json = (v: number) => (Number.isFinite(v) ? v : null);
const cell = (v: number) => (Number.isFinite(v) ? String(v) : "-");

test("the JSON form holds each function's and caller's values", () => {
  fc.assert(
    fc.property(summary, (s) => {
      const out = new Chunks();
      writeLatencyJson(s, out.out);
      const doc = JSON.parse(out.text());
      const statsOf = (x: Stats) => ({
        calls: json(x.calls),
        total: json(x.total),
        min: json(x.min),
        p50: json(x.p50),
        p90: json(x.p90),
        p99: json(x.p99),
        max: json(x.max),
      });
      assert.deepEqual(
        doc.functions,
        s.functions.map((f) => ({
          name: f.name,
          pid: f.pid,
          ...statsOf(f),
          incomplete: json(f.incomplete),
          onCpu: s.offCpuRecorded ? json(f.total - f.offCpu) : null,
          offCpu: s.offCpuRecorded ? json(f.offCpu) : null,
          histogram: f.histogram.map((b) => ({ from: json(b.from), to: json(b.to), count: json(b.count) })),
          callers: f.callers.map((c) => ({ caller: c.caller, ...statsOf(c) })),
        })),
      );
    }),
    { numRuns: 300 },
  );
});

test("the text form's table is the cells' table, each line trimmed", () => {
  fc.assert(
    fc.property(summary, (s) => {
      const out = new Chunks();
      writeLatencyText(s, out.out);
      const lines = out.text().split("\n");
      const from = lines.findIndex((l) => l.startsWith("calls") || /^ +calls/.test(l));
      const head = [
        "calls",
        "total",
        "p50",
        "p90",
        "p99",
        "max",
        ...(s.offCpuRecorded ? ["off-CPU"] : []),
        "incomplete",
      ];
      const counts = new Map<string, number>();
      for (const f of s.functions) counts.set(f.name, (counts.get(f.name) ?? 0) + 1);
      const rows: string[][] = [[...head, "function"]];
      const statCells = (x: Stats) => [x.calls, x.total, x.p50, x.p90, x.p99, x.max].map(cell);
      for (const f of s.functions) {
        const label = (counts.get(f.name) ?? 0) > 1 ? `${f.name} [pid ${f.pid}]` : f.name;
        rows.push([
          ...statCells(f),
          ...(s.offCpuRecorded ? [cell(f.offCpu)] : []),
          cell(f.incomplete),
          label,
        ]);
        for (const c of f.callers.slice(0, 3))
          rows.push([...statCells(c), ...(s.offCpuRecorded ? [""] : []), "", `<- ${c.caller ?? "[bottom]"}`]);
        const more = f.callers.length - 3;
        if (more > 0) rows.push([...head.map(() => ""), `<- ${more} more caller${more === 1 ? "" : "s"}`]);
      }
      const widths = head.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
      const expected = rows.map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padStart(widths[i]!)))
          .join("  ")
          .trimEnd(),
      );
      assert.deepEqual(lines.slice(from, from + expected.length), expected);
      // Nothing between the table and the end (no slowest calls here).
      assert.deepEqual(lines.slice(from + expected.length), [""]);
    }),
    { numRuns: 300 },
  );
});

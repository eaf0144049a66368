/** Number formats and plain-text tables for the benchmark's report. */

export const fmtInt = (n: number) => n.toLocaleString("en-US");
export const fmt = (n: number, d: number) => n.toFixed(d);
export const pct = (n: number) => `${(n * 100).toFixed(2)}%`;

function pad(s: string, w: number, right = false): string {
  return right ? s.padStart(w) : s.padEnd(w);
}

/** Rows of cells as aligned columns (the columns in `rightCols` right-aligned), indented by two. */
export function table(rows: string[][], rightCols: number[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map((r) => `  ${r.map((cell, c) => pad(cell, widths[c]!, rightCols.includes(c))).join("  ")}`.trimEnd())
    .join("\n");
}

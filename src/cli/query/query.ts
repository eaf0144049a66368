/**
 * `ptkit query DB "SQL" [--json]`: run SQL on a results database (`ptkit shard merge`,
 * `ptkit perf --db`) and print the result as CSV with a header (RFC 4180 quoting), or
 * as a JSON array of objects.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { queryDatabase } from "../../node/duckdb.js";
import { ioErrorText, openError } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";

export const QUERY_HELP = `usage: ptkit query DB SQL [--json]

Run SQL on a results database ('ptkit shard merge', 'ptkit perf --db') and print
the result as CSV with a header, or with --json as a JSON array of objects.

Tables: functions (input, process, thread, comm, function, dso, calls, self_insns,
total_insns, self_time_ns, total_time_ns), calls (input, process, thread, comm,
function, dso, caller, depth, start_ns, duration_ns; with shard plan --calls or
perf --db-calls), edges (input, from, to, kind, count), gaps (input, process,
thread, what, offset, message, time_ns), shards, meta.

examples:
  ptkit query results.duckdb "select function, sum(self_insns) s from functions group by 1 order by s desc limit 10"
  ptkit query results.duckdb --json "select kind, sum(count) n from edges group by kind"
`;

export async function runQuery(argv: readonly string[], io: SessionIo): Promise<number> {
  let p: ReturnType<
    typeof parseArgs<{
      options: { json: { type: "boolean" }; help: { type: "boolean"; short: "h" } };
      allowPositionals: true;
    }>
  >;
  try {
    p = parseArgs({
      args: [...argv],
      options: { json: { type: "boolean" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
    });
  } catch (e) {
    io.stderr(`ptkit query: ${(e as Error).message}\nUse --help or -h for help.\n`);
    return 1;
  }
  if (p.values.help) {
    io.stdout(QUERY_HELP);
    return 0;
  }
  if (p.positionals.length !== 2) {
    io.stderr("ptkit query: expected a database and one SQL statement.\nUse --help or -h for help.\n");
    return 1;
  }
  const [db, sql] = p.positionals as [string, string];
  const unreadable = openError(io, db);
  if (unreadable !== undefined) {
    io.stderr(`ptkit query: ${unreadable}\n`);
    return 1;
  }
  let result: Awaited<ReturnType<typeof queryDatabase>>;
  try {
    result = await queryDatabase(resolve(io.cwd, db), sql);
  } catch (e) {
    const message = (e as Error).message.split("\n")[0];
    io.stderr(`ptkit query: ${db}: ${(e as NodeJS.ErrnoException).code ? ioErrorText(e) : message}\n`);
    return 1;
  }
  if (p.values.json) {
    const objects = result.rows.map((row) => Object.fromEntries(result.columns.map((c, i) => [c, row[i]])));
    io.stdout(`${JSON.stringify(objects)}\n`);
    return 0;
  }
  const lines = [result.columns.map(csvField).join(",")];
  for (const row of result.rows) lines.push(row.map(csvField).join(","));
  io.stdout(`${lines.join("\n")}\n`);
  return 0;
}

/** A CSV field: null as nothing; quoted when it holds a comma, quote or line break. */
function csvField(v: unknown): string {
  if (v === null || v === undefined) return "";
  const s = typeof v === "object" ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

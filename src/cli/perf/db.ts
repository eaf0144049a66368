/**
 * `ptkit perf --db DB perf.data`: the shard tables of the whole file, made in one
 * process (every stream, one decode) and written to a DuckDB database, as `ptkit
 * shard plan/run/merge` would make them over many. Without --db, `ptkit perf` as it is.
 */
import { resolve } from "node:path";
import { ioErrorText } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";
import { runPerf } from "./perf.js";

/** Outputs that read call stacks, which the tables' decode keeps per thread run (so not with --db). */
const STACK_OUTPUTS = ["--timeline", "--perfetto", "--folded", "--jsonl", "--latency"];

export async function runPerfCommand(argv: readonly string[], io: SessionIo): Promise<number> {
  const at = argv.indexOf("--db");
  if (at < 0 || argv.slice(0, at).includes("--")) return runPerf(argv, io);
  const db = argv[at + 1];
  if (db === undefined || db.startsWith("-")) {
    io.stderr("ptkit perf: --db: expected a database file.\nUse --help or -h for help.\n");
    return 1;
  }
  let rest = [...argv.slice(0, at), ...argv.slice(at + 2)];
  const calls = rest.includes("--db-calls");
  rest = rest.filter((a) => a !== "--db-calls");
  const clash = rest.find((a) => STACK_OUTPUTS.includes(a));
  if (clash !== undefined) {
    io.stderr(`ptkit perf: --db cannot be combined with ${clash}: run them as two commands.\n`);
    return 1;
  }
  // The shard layer and the merge only for --db: `ptkit perf` alone loads neither.
  const [{ TablesOut }, { ResultsBuilder }, { ResultFiles }] = await Promise.all([
    import("../../shard/tables-out.js"),
    import("../../shard/tables.js"),
    import("../shard/merge.js"),
  ]);
  const tables = new TablesOut(calls);
  const code = runPerf(rest, io, process.env.HOME, { tables });
  if (code !== 0) return code;
  const input = rest.filter((a) => !a.startsWith("-")).at(-1) ?? "";
  const builder = new ResultsBuilder();
  builder.addInput(input, [tables.data(0)]);
  const results = builder.results();
  const files = new ResultFiles();
  try {
    files.add(results);
    await files.database(resolve(io.cwd, db), "");
  } catch (e) {
    io.stderr(`ptkit perf: --db ${db}: ${ioErrorText(e)}\n`);
    return 1;
  } finally {
    files.remove();
  }
  const rows = (t: { values: unknown[][] }) => t.values[0]?.length ?? 0;
  io.stdout(
    `wrote ${db}: ${rows(results.functions)} function rows, ${calls ? `${rows(results.calls)} calls, ` : ""}${rows(results.edges)} edges, ${rows(results.gaps)} gaps\n`,
  );
  return 0;
}

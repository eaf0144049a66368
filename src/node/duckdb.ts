/**
 * The embedded database (DuckDB, through @duckdb/node-api, loaded only by the commands
 * that use it): result tables loaded from Parquet files into a database file, and
 * queries.
 */
import { existsSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import type { DuckDBConnection } from "@duckdb/node-api";

/** A connection to the database at `path`; closeSync closes the database too. */
async function connect(path: string, readOnly = false): Promise<{ c: DuckDBConnection; closeSync(): void }> {
  // Required, not imported (a CommonJS package): the CLI's bundle, compiled as a script
  // (code-cache.ts), may not import() without an experimental loader.
  const { DuckDBInstance } = createRequire(import.meta.url)(
    "@duckdb/node-api",
  ) as typeof import("@duckdb/node-api");
  const db = await DuckDBInstance.create(path, readOnly ? { access_mode: "READ_ONLY" } : {});
  const c = await db.connect();
  return {
    c,
    closeSync: () => {
      c.closeSync();
      db.closeSync();
    },
  };
}

/** A SQL string literal. */
export function sqlString(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * The database at `path` made anew with a table per set of Parquet files (name → files) and a
 * `meta` table of key-value pairs: built beside it and renamed over it, so a reader
 * never sees half a database.
 */
export async function writeDatabase(
  path: string,
  tables: Readonly<Record<string, readonly string[]>>,
  meta: Readonly<Record<string, string>>,
): Promise<void> {
  const temp = `${path}.tmp`;
  rmSync(temp, { force: true });
  rmSync(`${temp}.wal`, { force: true });
  const db = await connect(temp);
  const c = db.c;
  try {
    for (const [name, files] of Object.entries(tables))
      await c.run(`create table ${name} as select * from read_parquet([${files.map(sqlString).join(", ")}])`);
    await c.run("create table meta (key varchar, value varchar)");
    for (const [k, v] of Object.entries(meta))
      await c.run(`insert into meta values (${sqlString(k)}, ${sqlString(v)})`);
    await c.run("checkpoint");
  } finally {
    db.closeSync();
  }
  if (existsSync(`${temp}.wal`)) throw new Error(`${temp}: the database was not checkpointed`);
  renameSync(temp, path);
}

/** A query's result: column names and rows of values as DuckDB's JSON form gives them. */
export interface QueryResult {
  columns: string[];
  rows: unknown[][];
}

/** Run `sql` on the database at `path` (read-only). */
export async function queryDatabase(path: string, sql: string): Promise<QueryResult> {
  const db = await connect(path, true);
  const c = db.c;
  try {
    const r = await c.runAndReadAll(sql);
    return { columns: r.columnNames(), rows: r.getRowsJson() as unknown[][] };
  } finally {
    db.closeSync();
  }
}

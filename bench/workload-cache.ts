/**
 * A benchmark workload made once into its own directory and reused: `meta.json`,
 * written last (through a rename), marks a complete set; anything else found there
 * is a set cut short and is made again.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The workload whose metadata `dir/meta.json` holds, or made now by `make` (into
 * `dir`, emptied first) and its metadata written there. `source` says which, and how
 * long making it took.
 */
export function cachedWorkload<T extends { source: string }>(dir: string, make: () => T): T {
  const meta = join(dir, "meta.json");
  if (existsSync(meta)) {
    const w = JSON.parse(readFileSync(meta, "utf8")) as T;
    return { ...w, source: `cached in ${dir}` };
  }
  const start = performance.now();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const w = make();
  writeFileSync(`${meta}.tmp`, JSON.stringify(w));
  renameSync(`${meta}.tmp`, meta);
  return { ...w, source: `generated in ${((performance.now() - start) / 1000).toFixed(1)} s into ${dir}` };
}

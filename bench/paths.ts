/** Where the benchmark keeps its files (run from dist/bench/ or anywhere else). */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: dist/bench/paths.js is two levels below it. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Generated traces and the compiled libipt harness (git-ignored). */
export const CACHE_DIR = join(REPO_ROOT, "bench", ".cache");

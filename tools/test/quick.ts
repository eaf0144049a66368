/**
 * `npm run test:quick`: the test suite without the files that drive slow external
 * tools (valgrind, perf record, a C compiler, Chromium, objdump, system binaries), for
 * the edit-build-test loop. A test file opts out by holding the line
 *
 *   // test:quick skips this file: <why>
 *
 * `npm test` (and CI) still runs everything. Arguments are passed on to `node --test`.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const MARKER = "// test:quick skips this file:";

/** Every compiled test file under `dir`, in a stable order. */
function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testFiles(path));
    else if (entry.name.endsWith(".test.js")) out.push(path);
  }
  return out.sort();
}

const testDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test");
const all = testFiles(testDir);
const skipped = all.filter((f) => readFileSync(f, "utf8").includes(MARKER));
const run = all.filter((f) => !skipped.includes(f));
process.stderr.write(
  `test:quick: ${run.length} test files; skipping ${skipped.length} that use slow external tools ` +
    `(${skipped.map((f) => relative(testDir, f)).join(", ")})\n`,
);
// One test file per core at once (node's default leaves one core free); each file
// runs in its own process with its own temporary directories.
const args = process.argv.slice(2);
const concurrency = args.some((a) => a.startsWith("--test-concurrency"))
  ? []
  : [`--test-concurrency=${availableParallelism()}`];
const r = spawnSync(process.execPath, ["--test", ...concurrency, ...args, ...run], { stdio: "inherit" });
process.exitCode = r.status ?? 1;

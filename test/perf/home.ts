/**
 * A home directory for `ptkit perf` runs whose ~/.debug (the build-id cache) is
 * certainly empty: a fresh temporary directory, removed when the test process
 * ends. A fixed path such as /nonexistent-home may exist where the tests run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const EMPTY_HOME = mkdtempSync(join(tmpdir(), "ptkit-home-"));
process.on("exit", () => rmSync(EMPTY_HOME, { recursive: true, force: true }));

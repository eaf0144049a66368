/**
 * Event Trace end to end: random programs with interrupts and page faults in user
 * code, interrupts in kernel code and IF cleared by the handlers, traced with
 * EventEn=1 (CFE, EVD, MODE.Exec with IF), decoded by Debian's libipt 2.0.5 (which
 * predates Event Trace: the harness skips CFE and EVD as unknown packets) and by
 * ptkit; both must give back exactly the executed instructions the configuration
 * traces. ptkit's events must name every interrupt and fault the trace records.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { buildLibiptHarness } from "../../../tools/libipt/harness.js";
import { checkGeneratedCase } from "./libipt-case.js";
import { KERNEL_CODE } from "./random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-et-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

const SEEDS = Number(process.env.PTKIT_GEN_SEEDS ?? 30);

describe("Event Trace: generated traces decode with libipt and ptkit to the executed instructions", {
  skip,
}, () => {
  const kernel = join(dir, "kernel.bin");
  writeFileSync(kernel, KERNEL_CODE);
  let cfes = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    test(`seed ${seed}`, () => {
      const list = checkGeneratedCase(seed, { bin, dir, kernel, tag: `et${seed}`, eventTrace: true });
      cfes += list.filter((l) => l.startsWith("cfe ")).length;
    });
  }
  test("the traces hold CFEs", () => {
    assert.ok(cfes > 0);
  });
});

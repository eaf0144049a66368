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
import { runInsns } from "../../flow/run.js";
import { checkGeneratedCase, generateCase } from "./libipt-case.js";
import { KERNEL_CODE, programImage } from "./random-program.js";

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
      // ptkit reports one interrupt per CFE(INTR), with a page fault's address when an EVD gave it, one IRET per CFE(IRET).
      const { program, res } = generateCase(seed, undefined, true);
      if (res.overflows > 0) return;
      const image = programImage(program);
      const lines = runInsns(res.bytes, { image }).lines;
      const count = (xs: readonly string[], p: string) => xs.filter((l) => l.startsWith(p)).length;
      assert.equal(count(lines, "[interrupt "), count(list, "cfe 1:"));
      assert.equal(lines.filter((l) => l.includes(" cr2=")).length, count(list, "evd 0 "));
      assert.equal(count(lines, "[iret"), count(list, "cfe 2:"));
    });
  }
  test("the traces hold CFEs", () => {
    assert.ok(cfes > 0);
  });
});

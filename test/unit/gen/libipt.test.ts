/**
 * End to end: random programs (real code) run under random configurations; their
 * traces, decoded by Debian's libipt 2.0.5 instruction decoder (the independent
 * checker, tools/libipt/harness.c --insn) and by ptkit's own instruction flow decoder,
 * must give back exactly the executed instructions minus what the configuration
 * filters out (the oracle in oracle.ts); with an internal-buffer overflow, a
 * subsequence of them.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { buildLibiptHarness } from "../../../tools/libipt/harness.js";
import { checkGeneratedCase } from "./libipt-case.js";
import { KERNEL_CODE } from "./random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-gen-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Random cases to run; PTKIT_GEN_SEEDS asks for more (or fewer). */
const SEEDS = Number(process.env.PTKIT_GEN_SEEDS ?? 60);

describe("generated traces decode with libipt to the executed instructions", { skip }, () => {
  const kernel = join(dir, "kernel.bin");
  writeFileSync(kernel, KERNEL_CODE);
  for (let seed = 1; seed <= SEEDS; seed++) {
    test(`seed ${seed}`, () => {
      checkGeneratedCase(seed, { bin, dir, kernel, tag: `${seed}` });
    });
  }
});

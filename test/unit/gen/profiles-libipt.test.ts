/**
 * The CPU profiles keep traces valid: random programs (real code) under random
 * configurations, generated with each profile, decode with Debian's libipt 2.0.5
 * (tools/libipt/harness.c --insn) and with ptkit's instruction flow decoder, both
 * told the profile's CPU (its errata, BDM70 among them), to exactly the executed
 * instructions the configuration traces (oracle.ts); with an internal-buffer
 * overflow, to a subsequence of them.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { cpuErrata } from "../../../src/cpu/errata.js";
import { defaultDecoderConfig } from "../../../src/event/config.js";
import { PRESETS, type PresetName } from "../../../src/unit/index.js";
import { buildLibiptHarness } from "../../../tools/libipt/harness.js";
import { checkGeneratedCase } from "./libipt-case.js";
import { KERNEL_CODE } from "./random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-profiles-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Random cases per profile; PTKIT_GEN_SEEDS asks for more (or fewer). */
const SEEDS = Math.ceil(Number(process.env.PTKIT_GEN_SEEDS ?? 60) / 2);

/** One preset per distinct profile. */
const PRESETS_TESTED: PresetName[] = ["broadwell", "skylake", "skylakeSp", "alderlakeP", "icelake"];

/** A PSB+ with a FUP followed by a TIP.PGE: BDM70's form. */
function hasBdm70Psb(list: readonly string[]): boolean {
  for (let k = list.indexOf("psbend"); k >= 0; k = list.indexOf("psbend", k + 1)) {
    const psb = list.lastIndexOf("psb", k);
    const fup = list.slice(psb, k).some((l) => l.startsWith("fup"));
    const next = list.slice(k + 1).find((l) => !/^(pad|mtc|cyc|tsc|tma|cbr)/.test(l));
    if (fup && next?.startsWith("tip.pge")) return true;
  }
  return false;
}

for (const preset of PRESETS_TESTED) {
  const profile = PRESETS[preset].profile;
  const [family, model] = PRESETS[preset].models[0]!.split("_").map((x) => Number.parseInt(x, 16)) as [
    number,
    number,
  ];
  const cpu = `${family}/${model}`;
  const config = defaultDecoderConfig();
  config.errata = cpuErrata({ family, model, stepping: 0 })!;
  let bdm70Seen = 0;

  describe(`${preset} (${profile.name}): generated traces decode with libipt and ptkit`, { skip }, () => {
    const kernel = join(dir, "kernel.bin");
    writeFileSync(kernel, KERNEL_CODE);
    for (let seed = 1; seed <= SEEDS; seed++) {
      test(`seed ${seed}`, () => {
        const list = checkGeneratedCase(seed, {
          bin,
          dir,
          kernel,
          tag: `${preset}-${seed}`,
          profile,
          cpu,
          config,
        });
        if (hasBdm70Psb(list)) bdm70Seen++;
      });
    }
    test("the cases exercise BDM70's PSB+ where the profile writes it", () => {
      if (profile.filteredPsb.value === "bdm70" && SEEDS >= 20)
        assert.ok(bdm70Seen > 0, "no BDM70 PSB+ generated");
      if (profile.filteredPsb.value === "sdm") assert.equal(bdm70Seen, 0);
    });
  });
}

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
import { Image } from "../../../src/image/index.js";
import { generate } from "../../../src/unit/gen/index.js";
import { PRESETS, type PresetName } from "../../../src/unit/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { runInsns } from "../../flow/run.js";
import { msrs, packetList } from "./helpers.js";
import { tracedIps } from "./oracle.js";
import { programSize, randomCase } from "./random-case.js";
import { KERNEL_CODE, KERNEL_HI, KERNEL_LO, randomProgram, randomRun, USER_BASE } from "./random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-profiles-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Random cases per profile; PTKIT_GEN_SEEDS asks for more (or fewer). */
const SEEDS = Math.ceil(Number(process.env.PTKIT_GEN_SEEDS ?? 60) / 2);

/** One preset per distinct profile. */
const PRESETS_TESTED: PresetName[] = ["broadwell", "skylake", "skylakeSp", "alderlakeP", "icelake"];

/** `a` is a subsequence of `b`. */
function subsequence(a: readonly string[], b: readonly string[]): boolean {
  let j = 0;
  for (const x of a) {
    while (j < b.length && b[j] !== x) j++;
    if (j++ >= b.length) return false;
  }
  return true;
}

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
        const program = randomProgram(seed, programSize(seed));
        const exec = randomRun(program, seed, { insns: 3000, interrupts: 0.01, wildReturns: 0.05 });
        const c = randomCase(seed, program.code.length);
        const m = msrs({
          preset: "skylake",
          caps: { ptwrite: true },
          ctl: c.ctl,
          ranges: c.ranges,
          cr3Match: c.cr3Match,
        });
        const res = generate(exec, {
          msrs: m,
          profile,
          cyclesPerInsn: c.cyclesPerInsn,
          longTnt: c.longTnt,
          internalBuffer: c.internalBuffer,
        });
        const list = packetList(res.bytes);
        assert.ok(!list.some((l) => l.startsWith("error")), "ptkit cannot decode its packets");
        if (hasBdm70Psb(list)) bdm70Seen++;
        const code = join(dir, `code-${preset}-${seed}.bin`);
        const trace = join(dir, `trace-${preset}-${seed}.pt`);
        writeFileSync(code, program.code);
        writeFileSync(trace, res.bytes);
        const out = runInsnDecoder(bin, trace, [`${code}:${USER_BASE}`, `${kernel}:0xffffffff81000000`], cpu);
        assert.ok(Array.isArray(out), JSON.stringify(out));
        const errors = out.filter((l) => l.startsWith("E ") || l.startsWith("X "));
        const got = out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!);
        const image = new Image();
        image.addRaw("code", program.code, 0, USER_BASE);
        image.addRaw("kernel", KERNEL_CODE, KERNEL_HI, KERNEL_LO);
        const ours = runInsns(res.bytes, { image, config }).ips.map((ip) => `0x${ip.toString(16)}`);
        const want = tracedIps(exec, c.filter);
        const where = `trace ${trace}, --cpu ${cpu}`;
        for (const [who, ips] of [
          ["libipt", got],
          ["ptkit", ours],
        ] as const) {
          if (res.overflows > 0) {
            assert.ok(
              subsequence(ips, want),
              `${who}: not a subsequence of the executed instructions; ${where}`,
            );
            continue;
          }
          const k = ips.findIndex((ip, j) => ip !== want[j]);
          if (k >= 0 || ips.length !== want.length) {
            assert.fail(`${who}: first difference at ${k}: ${ips[k]} for ${want[k]}; ${where}`);
          }
        }
        if (res.overflows === 0) assert.deepEqual(errors, [], where);
      });
    }
    test("the cases exercise BDM70's PSB+ where the profile writes it", () => {
      if (profile.filteredPsb.value === "bdm70" && SEEDS >= 20)
        assert.ok(bdm70Seen > 0, "no BDM70 PSB+ generated");
      if (profile.filteredPsb.value === "sdm") assert.equal(bdm70Seen, 0);
    });
  });
}

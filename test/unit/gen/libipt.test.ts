/**
 * End to end: random programs (real code) run under random configurations; their
 * traces, decoded by Debian's libipt 2.0.5 instruction decoder (the independent
 * checker, tools/libipt/harness.c --insn) and by ptkit's own instruction flow decoder,
 * must give back exactly the executed instructions minus what the configuration
 * filters out (the oracle in oracle.ts); with an internal-buffer overflow, a
 * subsequence of them.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Image } from "../../../src/image/index.js";
import { generate } from "../../../src/unit/gen/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { runInsns } from "../../flow/run.js";
import { msrs, packetList } from "./helpers.js";
import { tracedIps } from "./oracle.js";
import { programSize, randomCase } from "./random-case.js";
import { KERNEL_CODE, KERNEL_HI, KERNEL_LO, randomProgram, randomRun, USER_BASE } from "./random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-gen-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Random cases to run; PTKIT_GEN_SEEDS asks for more (or fewer). */
const SEEDS = Number(process.env.PTKIT_GEN_SEEDS ?? 60);

/** `a` is a subsequence of `b`. */
function subsequence(a: readonly string[], b: readonly string[]): boolean {
  let j = 0;
  for (const x of a) {
    while (j < b.length && b[j] !== x) j++;
    if (j++ >= b.length) return false;
  }
  return true;
}

describe("generated traces decode with libipt to the executed instructions", { skip }, () => {
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
        cyclesPerInsn: c.cyclesPerInsn,
        longTnt: c.longTnt,
        internalBuffer: c.internalBuffer,
      });
      const list = packetList(res.bytes);
      assert.ok(
        !list.some((l) => l.startsWith("error")),
        `ptkit cannot decode: ${list.find((l) => l.startsWith("error"))}`,
      );
      const code = join(dir, `code-${seed}.bin`);
      const trace = join(dir, `trace-${seed}.pt`);
      writeFileSync(code, program.code);
      writeFileSync(trace, res.bytes);
      const out = runInsnDecoder(bin, trace, [`${code}:${USER_BASE}`, `${kernel}:0xffffffff81000000`]);
      assert.ok(Array.isArray(out), JSON.stringify(out));
      const errors = out.filter((l) => l.startsWith("E ") || l.startsWith("X "));
      const got = out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!);
      const image = new Image();
      image.addRaw("code", program.code, 0, USER_BASE);
      image.addRaw("kernel", KERNEL_CODE, KERNEL_HI, KERNEL_LO);
      const ours = runInsns(res.bytes, { image }).ips.map((ip) => `0x${ip.toString(16)}`);
      const want = tracedIps(exec, c.filter);
      const where = `trace ${trace}, config ${JSON.stringify(c, (_, v) => (typeof v === "bigint" ? `0x${v.toString(16)}` : v))}`;
      for (const [who, ips] of [
        ["libipt", got],
        ["ptkit", ours],
      ] as const) {
        if (res.overflows > 0) {
          assert.ok(
            subsequence(ips, want),
            `${who}'s instructions are not a subsequence of the executed ones; ${where}`,
          );
          continue;
        }
        const k = ips.findIndex((ip, j) => ip !== want[j]);
        if (k >= 0 || ips.length !== want.length) {
          assert.fail(
            `${who}: first difference at ${k}: ${ips[k]} for ${want[k]} (${ips.length} vs ${want.length}); ${where}`,
          );
        }
      }
      if (res.overflows === 0) assert.deepEqual(errors, [], where);
    });
  }
});

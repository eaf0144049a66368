/**
 * End to end: random programs (real code) run under random configurations; their
 * traces, decoded by Debian's libipt 2.0.5 instruction decoder (the independent
 * checker, tools/libipt/harness.c --insn) and by ptkit's own instruction flow decoder,
 * must give back exactly the executed instructions minus what the configuration
 * filters out (the oracle in oracle.ts); with an internal-buffer overflow, a
 * subsequence of them.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Image } from "../../../src/image/index.js";
import { generate } from "../../../src/unit/gen/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { runInsns } from "../../flow/run.js";
import { rng } from "../output/helpers.js";
import { type CtlFields, msrs, packetList } from "./helpers.js";
import { type TraceFilter, tracedIps } from "./oracle.js";
import {
  CR3,
  KERNEL_CODE,
  KERNEL_HI,
  KERNEL_LO,
  randomProgram,
  randomRun,
  USER_BASE,
} from "./random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-gen-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Random cases to run; PTKIT_GEN_SEEDS asks for more (or fewer). */
const SEEDS = Number(process.env.PTKIT_GEN_SEEDS ?? 60);

interface Case {
  ctl: CtlFields;
  ranges: [bigint, bigint][];
  filter: TraceFilter;
  cr3Match?: bigint;
  cyclesPerInsn: number;
  longTnt: boolean;
  internalBuffer?: { bytes: number; drainPerCycle: number };
}

/** A random configuration over a program of `size` code bytes. */
function randomCase(seed: number, size: number): Case {
  const r = rng(seed * 7919 + 1);
  const which = Math.floor(r() * 3);
  const os = which !== 1;
  const user = which !== 2;
  const ctl: CtlFields = {
    TraceEn: 1,
    BranchEn: 1,
    ToPA: 1,
    OS: os,
    User: user,
    DisRETC: r() < 0.3,
    PSBFreq: Math.floor(r() * 2),
    TSCEn: r() < 0.5,
    MTCEn: r() < 0.5,
    MTCFreq: [0, 3, 6, 9][Math.floor(r() * 4)]!,
    CYCEn: r() < 0.3,
    CycThresh: Math.floor(r() * 3),
    PTWEn: r() < 0.5,
    FUPonPTW: r() < 0.5,
  };
  const filter: TraceFilter = { os, user };
  const ranges: [bigint, bigint][] = [];
  const roll = r();
  const span = (): [bigint, bigint] => {
    const a = Math.floor(r() * size);
    const b = a + Math.floor(r() * (size - a));
    return [BigInt(USER_BASE + a), BigInt(USER_BASE + b)];
  };
  if (roll < 0.3) {
    ranges.push(span());
    ctl.ADDR0_CFG = 1;
    filter.filters = [ranges[0]!];
  } else if (roll < 0.4) {
    ranges.push(span());
    ctl.ADDR0_CFG = 2;
    filter.stops = [ranges[0]!];
  }
  let cr3Match: bigint | undefined;
  if (r() < 0.15) {
    ctl.CR3Filter = 1;
    cr3Match = r() < 0.8 ? BigInt(CR3) : 0x2000n;
    filter.cr3 = cr3Match;
  }
  const overflow = r() < 0.1;
  return {
    ctl,
    ranges,
    filter,
    cr3Match,
    cyclesPerInsn: Math.floor(r() * 3),
    longTnt: r() < 0.3,
    internalBuffer: overflow ? { bytes: 64, drainPerCycle: 0.5 } : undefined,
  };
}

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
      const program = randomProgram(seed, 20 + ((seed * 37) % 180));
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

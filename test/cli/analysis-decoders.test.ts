/**
 * `ptkit flow`'s analysis outputs do not depend on the decoder: the block decoder
 * (default, and with end-on-call/jump) writes the same --folded, --timeline,
 * --coverage, --afl-map, --edges and --jsonl files as the instruction decoder, byte
 * for byte, and prints the same listing, on kernel-traced runs: generated programs (system
 * calls through SYSRETQ, interrupts through IRETQ, indirect jumps and calls, each run
 * many times so that the block decoder works from its block cache), and, where gcc
 * and valgrind are installed, the real programs of test/fixtures/programs as
 * `ptkit simulate` traces them (its stand-in kernel).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { parseSimulateArgs } from "../../src/cli/simulate/options.js";
import { generate } from "../../src/unit/gen/index.js";
import { MsrFile, presetCapabilities } from "../../src/unit/index.js";
import { captureIo } from "../conformance/ptt.js";
import { programs } from "../unit/e2e/programs.js";
import { BRANCHES, type CtlFields, msrs } from "../unit/gen/helpers.js";
import { randomProgram, randomRun, writeProgramFiles } from "../unit/gen/random-program.js";

const OUTPUTS = ["folded.txt", "timeline.json", "coverage.json", "afl.bin", "edges.txt", "flow.jsonl"];
const OUTPUT_ARGS = ["--folded", "--timeline", "--coverage", "--afl-map", "--edges", "--jsonl"].flatMap(
  (o, k) => [o, OUTPUTS[k]!],
);

/** The block decoder's variants, then the instruction decoder (the reference). */
const DECODERS: [string, string[]][] = [
  ["block decoder", ["--block-decoder"]],
  ["block decoder, end on call and jump", ["--block-decoder", "--block:end-on-call", "--block:end-on-jump"]],
  ["instruction decoder", ["--insn-decoder"]],
];

/** The outputs of call stacks alone (no coverage, nothing per instruction), by index in OUTPUTS. */
const STACKS = [0, 1];

/**
 * Decode `trace` in `dir` over the `--raw` images with `decoder`: stdout and every
 * output file (with `only`, those outputs alone are asked for).
 */
async function outputs(dir: string, raw: string[], trace: string, decoder: string[], only?: number[]) {
  const io = captureIo(dir);
  const images = raw.flatMap((r) => ["--raw", r]);
  const asked = only === undefined ? OUTPUT_ARGS : only.flatMap((i) => OUTPUT_ARGS.slice(2 * i, 2 * i + 2));
  for (const f of OUTPUTS) rmSync(join(dir, f), { force: true });
  const code = await main(["flow", ...decoder, ...images, "--nom-freq", "20", "--pt", trace, ...asked], io);
  const stderr = io.err.join("");
  assert.equal(code, 0, stderr);
  // Only warnings (raw images have no symbols; a run without timing has no clock).
  assert.ok(
    stderr.split("\n").every((l) => l === "" || l.startsWith("ptkit flow: warning: ")),
    stderr,
  );
  const files = OUTPUTS.map((f, i) =>
    only === undefined || only.includes(i) ? readFileSync(join(dir, f)) : undefined,
  );
  return { stdout: io.out.join(""), stderr, files };
}

/** Decode with every decoder and compare everything with the instruction decoder's. */
async function assertSameOutputs(dir: string, raw: string[], trace: string): Promise<void> {
  // One after the other: the runs write the same output files.
  const got = [];
  for (const [, argv] of DECODERS) got.push(await outputs(dir, raw, trace, argv));
  const insns = got.at(-1)!;
  // The run has what the test is about: returns from the kernel, many times.
  const jsonl = insns.files[OUTPUTS.indexOf("flow.jsonl")]!.toString();
  assert.ok((jsonl.match(/"kind":"far return"/g) ?? []).length > 5, "far returns in the run");
  got.slice(0, -1).forEach((blocks, k) => {
    const what = DECODERS[k]![0];
    assert.equal(blocks.stdout, insns.stdout, `${what}: stdout`);
    assert.equal(blocks.stderr, insns.stderr, `${what}: stderr`);
    OUTPUTS.forEach((file, i) => {
      assert.ok(
        blocks.files[i]!.equals(insns.files[i]!),
        `${what}: ${file} differs from the instruction decoder's`,
      );
    });
  });
  // Call stacks alone: the block decoder's blocks feed the analysis without a walk
  // where blocks end at calls.
  for (const [what, argv] of DECODERS.slice(0, -1)) {
    const stacks = await outputs(dir, raw, trace, argv, STACKS);
    for (const i of STACKS) {
      assert.ok(
        stacks.files[i]!.equals(insns.files[i]!),
        `${what}, call stacks alone: ${OUTPUTS[i]} differs from the instruction decoder's`,
      );
    }
  }
}

const CONFIGS: [string, CtlFields][] = [
  ["user and kernel", BRANCHES],
  ["with TSC, MTC and CYC", { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1 }],
  ["no RET compression", { ...BRANCHES, TSCEn: 1, DisRETC: 1 }],
];

describe("every analysis output is the same with either decoder: generated programs", () => {
  for (const seed of [1, 2, 3]) {
    for (const [name, ctl] of CONFIGS) {
      test(`program ${seed}, ${name}`, async () => {
        const program = randomProgram(seed, 60);
        const exec = randomRun(program, seed, { insns: 4000, interrupts: 0.01, wildReturns: 0.02 });
        const res = generate(exec, { msrs: msrs({ preset: "skylake", caps: { ptwrite: true }, ctl }) });
        assert.equal(res.overflows, 0);
        const dir = mkdtempSync(join(tmpdir(), "ptkit-decoders-"));
        const raw = writeProgramFiles(dir, program, res.bytes).filter((a) => a !== "--raw");
        await assertSameOutputs(dir, raw, "trace.pt");
      });
    }
  }
});

/** The programs with system calls, signals, and indirect calls through ld.so and the PLT. */
const REAL = ["syscalls", "signal", "indirect"];
const built = programs();

describe("every analysis output is the same with either decoder: real programs under valgrind", {
  skip: "skip" in built ? built.skip : false,
}, () => {
  if (!("programs" in built)) return;
  const dir = mkdtempSync(join(tmpdir(), "ptkit-decoders-"));
  for (const p of built.programs.filter((p) => REAL.includes(p.name))) {
    test(p.name, async () => {
      // `ptkit simulate`'s default configuration.
      const args = parseSimulateArgs(["-o", "-", "-"]);
      if (!("writes" in args)) throw new Error("simulate's defaults");
      const m = new MsrFile(presetCapabilities(args.preset));
      for (const w of args.writes) assert.ok(!m.writeMsr(w.msr, w.value));
      writeFileSync(join(dir, `${p.name}.pt`), generate(p.lackey.execution, { msrs: m }).bytes);
      await assertSameOutputs(dir, p.maps, `${p.name}.pt`);
    });
  }
});

/**
 * `ptkit flow --quiet --stat:insn` with no decoder named, in `--jobs` pieces: the
 * decision graph's walk counts each piece on a worker thread (session/count-pieces.ts),
 * and the command must print what one thread prints, whether the pieces make the
 * count, or fail a seam (the one-thread walk then counts), or hand over (the flow
 * decoder then decodes).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { largeFlowArgs } from "../../bench/large-workload.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { CHUNK_WORKER } from "../../src/cli/ptkit.js";
import { WorkerPool } from "../../src/node/workers.js";
import type { ChunkRunner } from "../../src/session/io.js";
import { generate } from "../../src/unit/gen/index.js";
import { captureIo } from "../conformance/ptt.js";
import { makeProgram } from "../flow/program.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { randomProgram, randomRun, writeProgramFiles } from "../unit/gen/random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-count-pieces-"));
/** Workers kept for the whole file; pieces as small as 256 bytes, so that small traces are cut. */
const pool = new WorkerPool(CHUNK_WORKER, true, 256);
after(async () => {
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** How the count in pieces went: the count, or undefined / -1 (see raw-session.ts), and the pieces; undefined when it did not run. */
type Outcome = { count: number | undefined; pieces: number } | undefined;

/**
 * Pieces on the workers alone: the command's thread, which counts pieces too, may count
 * a small trace's before a worker has started.
 */
const workersOnly: ChunkRunner = {
  threads: pool.threads,
  minChunk: pool.minChunk,
  run: (threads, tasks, onResult) => pool.run(threads, tasks, onResult),
};

async function flow(
  cwd: string,
  jobs: number,
  argv: string[],
  chunks: ChunkRunner = pool,
): Promise<Run & { outcome: Outcome }> {
  const io = captureIo(cwd);
  io.chunks = chunks;
  let outcome: Outcome;
  const code = await runFlow(["--jobs", String(jobs), ...argv], io, {
    onCountPieces: (count, pieces) => {
      outcome = { count, pieces };
    },
  });
  return { code, stdout: io.out.join(""), stderr: io.err.join(""), outcome };
}

/**
 * `--quiet --stat:insn argv` on one thread and on three (this one among them, and on
 * workers alone): the same exit code and output. Returns the pieces' outcome.
 */
async function sameBothWays(cwd: string, argv: string[]): Promise<{ one: Run; outcome: Outcome }> {
  const quiet = ["--quiet", "--stat:insn", ...argv];
  const one = await flow(cwd, 1, quiet);
  assert.equal(one.outcome, undefined, "one thread counted in pieces");
  const three = await flow(cwd, 3, quiet);
  const workers = await flow(cwd, 3, quiet, workersOnly);
  for (const run of [three, workers])
    assert.deepEqual(
      { code: run.code, stdout: run.stdout, stderr: run.stderr },
      { code: one.code, stdout: one.stdout, stderr: one.stderr },
      argv.join(" "),
    );
  assert.deepEqual(workers.outcome, three.outcome, argv.join(" "));
  return { one, outcome: three.outcome };
}

/** The count `--block-decoder` prints for the same trace (the decision graph's walk is not in it). */
async function blockCount(cwd: string, argv: string[]): Promise<string> {
  return (await flow(cwd, 1, ["--block-decoder", "--quiet", "--stat:insn", ...argv])).stdout;
}

/** A small fuzzing workload (made once, cached in the test's directory). */
function smallFuzz(): ReturnType<typeof loadFuzzWorkload> {
  return loadFuzzWorkload({ cacheDir: dir, codeBytes: 16384, traceBytes: 80_000, caseInsns: 20_000 });
}

describe("the count in pieces", () => {
  test("the fuzzing workload: made from many pieces, the block decoder's count", async () => {
    const w = smallFuzz();
    for (const trace of [w.trace, w.timingTrace]) {
      const argv = [...largeFlowArgs(w), "--pt", trace];
      const { one, outcome } = await sameBothWays(dir, argv);
      assert.equal(one.stdout, `insn: ${w.insns}.\n`);
      assert.ok(outcome !== undefined && outcome.pieces > 8, `${outcome?.pieces} pieces`);
      assert.equal(outcome.count, w.insns, "the pieces did not make the count");
      assert.equal(await blockCount(dir, argv), one.stdout);
    }
  });

  test("kernel-traced programs with interrupts and TIP.PGD/PGE at system calls: made from pieces", async () => {
    let made = 0;
    for (const seed of [1, 2, 3, 4]) {
      const program = randomProgram(seed, 60);
      const exec = randomRun(program, seed, { insns: 20_000, interrupts: 0.01, wildReturns: 0.02 });
      const ctl =
        seed % 2 === 0 ? { ...BRANCHES, OS: 0 } : { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1 };
      const res = generate(exec, { msrs: msrs({ preset: "skylake", caps: { ptwrite: false }, ctl }) });
      const cwd = mkdtempSync(join(dir, "prog-"));
      const argv = [...writeProgramFiles(cwd, program, res.bytes), "--pt", "trace.pt"];
      const { one, outcome } = await sameBothWays(cwd, argv);
      assert.ok(outcome !== undefined && outcome.pieces > 2, `seed ${seed}: ${outcome?.pieces} pieces`);
      if (outcome.count !== undefined && outcome.count > 0) made++;
      assert.equal(await blockCount(cwd, argv), one.stdout, `seed ${seed}`);
    }
    assert.ok(made >= 3, `${made} of 4 counts made from pieces`);
  });

  test("overflowing programs (OVFs that cut PSB+ short and after it): the walk's count, the block decoder's", async () => {
    let overflows = 0;
    for (const seed of [5, 6, 7]) {
      const program = randomProgram(seed, 60);
      const exec = randomRun(program, seed, { insns: 20_000, interrupts: 0.01, wildReturns: 0.02 });
      const ctl = { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: seed % 2 };
      const res = generate(exec, {
        msrs: msrs({ preset: "skylake", caps: { ptwrite: false }, ctl }),
        internalBuffer: { bytes: 64, drainPerCycle: 2 },
        cyclesPerInsn: 0.3,
      });
      overflows += res.overflows;
      const cwd = mkdtempSync(join(dir, "ovf-"));
      const argv = [...writeProgramFiles(cwd, program, res.bytes), "--pt", "trace.pt"];
      const { one, outcome } = await sameBothWays(cwd, argv);
      // (Pieces that start at a PSB+ an OVF cut short before its MODE.Exec cannot
      // know the mode, which the whole trace's walk carries: one thread counts then.)
      assert.ok(outcome !== undefined && outcome.pieces > 2, `seed ${seed}: ${outcome?.pieces} pieces`);
      assert.notEqual(outcome.count, -1, `seed ${seed}: the walk handed over`);
      assert.equal(await blockCount(cwd, argv), one.stdout, `seed ${seed}`);
    }
    assert.ok(overflows > 100, `${overflows} overflows`);
  });

  test("returns compressed across PSBs: the seams fail, one thread counts", async () => {
    // This generator compresses returns against one stack over the whole trace (hardware
    // does not across a PSB): a piece's fresh stack runs out where the whole walk's does not.
    let unmade = 0;
    for (let seed = 1; seed <= 6; seed++) {
      // Interrupts, overflows and PSBs (no transaction, no PTWRITE, no system call: the walk hands those over).
      const program = makeProgram({
        seed,
        steps: 6000,
        events: 0.01,
        tsx: false,
        weights: [40, 14, 5, 6, 1, 3, 2, 3, 0, 0],
      });
      const [section] = program.image.sections;
      assert.ok(section && program.image.sections.length === 1);
      const code = new Uint8Array(Number(section.end - section.start));
      const start = section.start;
      program.image.read(Number(start >> 32n), Number(start & 0xffffffffn), code, code.length);
      const cwd = mkdtempSync(join(dir, "ret-"));
      writeFileSync(join(cwd, "code.bin"), code);
      writeFileSync(join(cwd, "trace.pt"), program.trace);
      const argv = ["--raw", `code.bin:0x${start.toString(16)}`, "--pt", "trace.pt"];
      const { one, outcome } = await sameBothWays(cwd, argv);
      assert.ok(outcome !== undefined, `seed ${seed}: not counted in pieces`);
      if (outcome.count === undefined) unmade++;
      assert.equal(await blockCount(cwd, argv), one.stdout, `seed ${seed}`);
    }
    assert.ok(unmade >= 1, "no seam failed");
  });

  test("a bad --jobs is an error, also where the graph's walk would count on one thread", async () => {
    const w = smallFuzz();
    const io = captureIo(dir);
    const code = await runFlow(
      ["--jobs", "abc", "--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", w.trace],
      io,
    );
    assert.equal(code, 1);
    assert.equal(io.out.join(""), "");
    assert.equal(io.err.join(""), "ptkit flow: --jobs: bad argument: abc.\n");
  });

  test("a trace the walk hands over (no code, corrupt bytes, a cut end): the flow decoder's errors", async () => {
    const w = smallFuzz();
    const bytes = new Uint8Array(readFileSync(w.trace));
    // No code: the first piece's walk hands over, and so would one thread's.
    const none = await sameBothWays(dir, ["--pt", w.trace]);
    assert.equal(none.outcome?.count, -1);
    assert.match(none.one.stdout, /error/);
    // Corrupt bytes in the middle and a packet cut off at the end.
    const bad = bytes.slice(0, bytes.length - 3);
    bad.fill(0xd9, 40_000, 40_004);
    const path = join(dir, "corrupt.pt");
    writeFileSync(path, bad);
    const corrupt = await sameBothWays(dir, [...largeFlowArgs(w), "--pt", path]);
    assert.ok(corrupt.outcome !== undefined && corrupt.outcome.count === undefined);
    assert.match(corrupt.one.stdout, /error/);
  });
});

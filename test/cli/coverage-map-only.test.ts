/**
 * `--afl-map` alone takes a fast path (with `--quiet`: the fast coverage decode of
 * analysis/coverage-decode.ts where it covers the trace; else, and for the traces it
 * hands over, the block decoder's blocks replayed transfer by transfer, no tables of
 * blocks and edges, no call stacks): its map must be the one the full analysis
 * writes, byte for byte. Each trace is decoded three ways:
 * - `--afl-map` alone (the fast path);
 * - `--afl-map --coverage --edges` (with the tables: the fast coverage decode too, else transfers);
 * - the reference: `--afl-map --coverage --edges --jsonl --folded`, every instruction
 *   one by one with the call stacks kept;
 * each with the block decoder, on kernel-traced generated programs (system calls,
 * interrupts, indirect branches) and on libipt's conformance traces (shared corpus:
 * far transfers, TSX aborts, overflows, tracing off and on, decode errors).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { generate } from "../../src/unit/gen/index.js";
import { captureIo, loadPttChecks } from "../conformance/ptt.js";
import { BRANCHES, type CtlFields, msrs } from "../unit/gen/helpers.js";
import { randomProgram, randomRun, writeProgramFiles } from "../unit/gen/random-program.js";

const out = mkdtempSync(join(tmpdir(), "ptkit-map-only-"));
const file = (name: string) => join(out, name);

/** The three runs' extra arguments (see the module comment). */
const RUNS: [string, string[]][] = [
  ["--afl-map alone", ["--afl-map", file("fast.bin")]],
  [
    "with --coverage --edges",
    ["--afl-map", file("tables.bin"), "--coverage", file("t.json"), "--edges", file("t.txt")],
  ],
  [
    "every instruction",
    [
      ...["--afl-map", file("ref.bin"), "--coverage", file("r.json"), "--edges", file("r.txt")],
      ...["--jsonl", file("r.jsonl"), "--folded", file("r.folded")],
    ],
  ],
];

/**
 * `ptkit flow --block-decoder ...argv` run in `dir` each way: the exit codes and
 * outputs must agree. Returns the map's non-zero bytes (undefined when the run failed).
 */
async function compare(dir: string, argv: string[]): Promise<number | undefined> {
  const got: { code: number; stdout: string }[] = [];
  for (const name of ["fast.bin", "tables.bin", "ref.bin", "t.json", "r.json", "t.txt", "r.txt"])
    rmSync(file(name), { force: true });
  for (const [, extra] of RUNS) {
    const io = captureIo(dir);
    const code = await main(["flow", "--block-decoder", ...argv, ...extra], io);
    got.push({ code, stdout: io.out.join("") });
  }
  for (const [k, [what]] of RUNS.entries()) {
    assert.equal(got[k]!.code, got[2]!.code, `${what}: exit code`);
    assert.equal(got[k]!.stdout, got[2]!.stdout, `${what}: stdout`);
  }
  if (got[2]!.code !== 0) return undefined;
  const ref = readFileSync(file("ref.bin"));
  assert.equal(ref.length, 1 << 16);
  assert.ok(readFileSync(file("fast.bin")).equals(ref), "--afl-map alone: the map differs");
  assert.ok(readFileSync(file("tables.bin")).equals(ref), "with --coverage: the map differs");
  assert.equal(readFileSync(file("t.json"), "utf8"), readFileSync(file("r.json"), "utf8"), "--coverage");
  assert.equal(readFileSync(file("t.txt"), "utf8"), readFileSync(file("r.txt"), "utf8"), "--edges");
  return ref.filter((b) => b !== 0).length;
}

const CONFIGS: [string, CtlFields][] = [
  ["user and kernel", BRANCHES],
  ["with TSC, MTC and CYC", { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1 }],
  ["no RET compression", { ...BRANCHES, TSCEn: 1, DisRETC: 1 }],
  // Tracing off at each system call and interrupt, on at its return: many gaps, each
  // followed by a block from the block cache, reached from nowhere.
  ["user only", { ...BRANCHES, OS: 0 }],
];

describe("--afl-map alone writes the full analysis's map: generated kernel-traced programs", () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const [name, ctl] = CONFIGS[seed % CONFIGS.length]!;
    test(`program ${seed}, ${name}`, async () => {
      const program = randomProgram(seed, 60);
      const exec = randomRun(program, seed, { insns: 4000, interrupts: 0.01, wildReturns: 0.02 });
      const res = generate(exec, { msrs: msrs({ preset: "skylake", caps: { ptwrite: true }, ctl }) });
      const dir = mkdtempSync(join(tmpdir(), "ptkit-map-only-"));
      const raw = writeProgramFiles(dir, program, res.bytes);
      const argv = [...raw, "--nom-freq", "20", "--pt", "trace.pt", "--quiet"];
      const lit = await compare(dir, argv);
      // Many edges, user and kernel, each block run many times (from the block cache).
      assert.ok(lit !== undefined && lit > 50, `map bytes set: ${lit}`);
    });
  }
});

const ptxed = loadPttChecks().filter((c) => c.tool === "ptxed" && c.argv.includes("--block-decoder"));

describe("--afl-map alone writes the full analysis's map: libipt's conformance traces", {
  skip: ptxed.length === 0 ? "the shared corpus (ptt) is absent" : false,
}, () => {
  test(`${ptxed.length} traces`, async () => {
    let mapped = 0;
    for (const c of ptxed) {
      // ptxed's options, without the tool name and the decoder (given by compare).
      const argv = c.argv.slice(1).filter((a) => a !== "--block-decoder");
      try {
        const lit = await compare(c.dir, argv);
        if (lit !== undefined && lit > 0) mapped++;
      } catch (e) {
        throw new Error(`${c.id}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    // Most traces run code.
    assert.ok(mapped > ptxed.length / 2, `${mapped} of ${ptxed.length} maps not empty`);
  });
});

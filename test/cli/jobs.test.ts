/**
 * `--jobs`: a trace decoded in pieces on worker threads gives exactly what one
 * thread gives, on every corpus trace and on generated traces cut into many pieces.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { generateTrace } from "../../bench/synthetic-trace.js";
import { CHUNK_WORKER, main } from "../../src/cli/ptkit.js";
import { WorkerPool } from "../../src/node/workers.js";
import type { ChunkRunner } from "../../src/session/io.js";
import { captureIo, loadPttChecks } from "../conformance/ptt.js";
import { CORPUS_DIR, corpusPath } from "../corpus.js";
import { makeProgram } from "../flow/program.js";

/** Workers kept for the whole file; pieces as small as 32 bytes, so that even tiny traces are cut. */
const pool = new WorkerPool(CHUNK_WORKER, true, 32);
after(() => pool.close());

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

/** Runs of the pool, and the pieces they decoded (to check that pieces were used at all). */
const used = { runs: 0, pieces: 0 };
const counted: ChunkRunner = {
  threads: pool.threads,
  minChunk: pool.minChunk,
  run: (threads, tasks, onResult, local) => {
    used.runs++;
    used.pieces += tasks.length;
    return pool.run(threads, tasks, onResult, local);
  },
};

async function run(dir: string, argv: string[]): Promise<Run> {
  const io = captureIo(dir);
  io.chunks = counted;
  const code = await main(argv, io);
  return { stdout: io.out.join(""), stderr: io.err.join(""), code };
}

/** Whether the last --jobs 3 run of {@link sameBothWays} was cut into pieces. */
let lastRunInPieces = false;

/** The output of stats without its timing line. */
function untimed(r: Run): Run {
  return { ...r, stdout: r.stdout.replace(/^decoded in .*$/m, "") };
}

/** Run `command args file` with --jobs 1 and --jobs 3; the outputs must be the same. */
async function sameBothWays(dir: string, command: string, args: string[], file: string): Promise<Run> {
  const one = await run(dir, [command, "--jobs", "1", ...args, file]);
  const before = used.runs;
  const three = await run(dir, [command, "--jobs", "3", ...args, file]);
  lastRunInPieces = used.runs > before;
  const clean = command === "stats" ? untimed : (r: Run) => r;
  assert.deepEqual(clean(three), clean(one), `${command} ${args.join(" ")} ${file}`);
  return one;
}

/** The raw traces of the corpus: the conformance suite's and the real captures (not perf.data). */
function corpusTraces(): string[] {
  const root = corpusPath();
  if (!root) return [];
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(pt|bin)$/.test(e.name) && !/^ptt\/.*\.bin$/.test(p.slice(root.length + 1))) found.push(p);
    }
  };
  walk(root);
  return found.sort();
}

/** A synthetic trace of `size` bytes (a PSB+ every 4 KiB), with `edit` applied, in a fresh directory. */
function generated(size: number, edit?: (bytes: Uint8Array) => Uint8Array): string {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-jobs-"));
  const path = join(dir, "trace.pt");
  const bytes = generateTrace({ seed: 7, size });
  writeFileSync(path, edit ? edit(bytes) : bytes);
  return path;
}

/**
 * Bad opcodes in a PSB+ (their resync goes to the next PSB), junk over the start of
 * a PSB (where the planner may have put a piece), and a packet cut off at the end.
 */
function corrupt(b: Uint8Array): Uint8Array {
  b.fill(0xd9, 4096 * 5 + 3, 4096 * 5 + 5);
  b.fill(0x59, 4096 * 9 - 2, 4096 * 9 + 9);
  // PADs, then a TSC (8 bytes) cut off after 3.
  b.fill(0x00, b.length - 40);
  b[b.length - 3] = 0x19;
  return b;
}

const traces = corpusTraces();
const skip = traces.length === 0 ? `corpus ${CORPUS_DIR} is absent` : false;

describe("stats --jobs", () => {
  test("every corpus trace: the same statistics from pieces as from one decode", { skip }, async () => {
    for (const t of traces) await sameBothWays(dirname(t), "stats", ["--max-errors", "1000"], t);
  });

  test("a generated trace cut into pieces at its PSBs", async () => {
    const path = generated(1 << 20);
    const one = await sameBothWays(dirname(path), "stats", [], path);
    assert.ok(lastRunInPieces);
    assert.match(one.stdout, /psb segments +256\n/);
  });

  test("corrupt bytes inside pieces and a truncated end: the same errors and exit status", async () => {
    const path = generated(1 << 18, corrupt);
    const one = await sameBothWays(dirname(path), "stats", [], path);
    assert.match(one.stdout, /errors +[1-9]/);
    const json1 = JSON.parse((await run(dirname(path), ["stats", "-j", "1", "--json", path])).stdout);
    const json3 = JSON.parse((await run(dirname(path), ["stats", "-j", "3", "--json", path])).stdout);
    for (const j of [json1, json3]) {
      delete j.seconds;
      delete j.mbPerSecond;
    }
    assert.deepEqual(json3, json1);
  });

  test("a file a decoding thread cannot read: the system's error, not an internal one", async () => {
    const missing = join(mkdtempSync(join(tmpdir(), "ptkit-jobs-")), "gone.pt");
    const task = {
      kind: "stats",
      path: missing,
      from: 0,
      end: 4096,
      start: 0,
      stop: 4096,
      options: { maxErrors: 10 },
    };
    await assert.rejects(
      pool.run(2, [task, { ...task, from: 2048 }], () => {}),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, "ENOENT");
        assert.match(e.message, /gone\.pt/);
        return true;
      },
    );
  });

  test("a bad --jobs is an error", async () => {
    const r = await run(tmpdir(), ["stats", "--jobs", "0", "x.pt"]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "ptkit stats: --jobs: bad argument: 0.\n");
  });
});

describe("dump --jobs", () => {
  test("every corpus trace: the same listing from pieces as from one decode", { skip }, async () => {
    const before = used.pieces;
    for (const t of traces) {
      await sameBothWays(dirname(t), "dump", [], t);
      await sameBothWays(dirname(t), "dump", ["--quiet"], t);
      await sameBothWays(dirname(t), "dump", ["--no-sync", "--raw", "--exec-mode"], t);
    }
    assert.ok(used.pieces - before > 100, `${used.pieces - before} pieces`);
  });

  test("every ptdump check of the conformance suite", { skip }, async () => {
    for (const c of loadPttChecks().filter((c) => c.tool === "ptdump")) {
      const args = c.argv.slice(1, -1);
      await sameBothWays(c.dir, "dump", args, c.argv[c.argv.length - 1]!);
    }
  });

  test("a generated trace cut into pieces at its PSBs", async () => {
    const path = generated(1 << 18);
    const one = await sameBothWays(dirname(path), "dump", ["--raw"], path);
    assert.ok(lastRunInPieces);
    assert.equal(one.stdout.match(/psb\n/g)?.length, 64);
  });

  test("corrupt bytes inside pieces and a truncated end: the same errors and exit status", async () => {
    const path = generated(1 << 18, corrupt);
    const one = await sameBothWays(dirname(path), "dump", [], path);
    assert.ok(lastRunInPieces);
    assert.match(one.stdout, /error decoding packet/);
    assert.match(one.stderr, /cut off by the end of the trace/);
    await sameBothWays(dirname(path), "dump", ["--quiet"], path);
    const junk = generated(1 << 12, (b) => b.fill(0x55));
    const none = await sameBothWays(dirname(junk), "dump", [], junk);
    assert.equal(none.code, 1);
  });
});

describe("flow --jobs", () => {
  test("every ptxed check of the conformance suite", { skip }, async () => {
    for (const c of loadPttChecks().filter((c) => c.tool === "ptxed")) {
      const args = c.argv.slice(1);
      const one = await run(c.dir, ["flow", "--jobs", "1", ...args]);
      const three = await run(c.dir, ["flow", "--jobs", "3", ...args]);
      assert.deepEqual(three, one, c.id);
    }
  });

  test("every corpus trace, against no code: the same errors and exit status", { skip }, async () => {
    for (const t of traces) {
      await sameBothWays(dirname(t), "flow", ["--block-decoder", "--quiet", "--stat:insn", "--pt"], t);
      await sameBothWays(dirname(t), "flow", ["--insn-decoder", "--pt"], t);
      // No decoder named: the decision graph's count in pieces, which hands over here.
      await sameBothWays(dirname(t), "flow", ["--quiet", "--stat:insn", "--pt"], t);
    }
  });

  test("the HASE captures with their code: the same instructions from pieces", { skip }, async () => {
    const dir = corpusPath("real", "hase");
    assert.ok(dir);
    const bins = readdirSync(join(dir, "reference")).filter((f) => f.endsWith(".bin"));
    assert.ok(bins.length >= 4);
    const before = used.pieces;
    let decoded = 0;
    for (const bin of bins) {
      const program = bin.startsWith("loopy") ? "loopy" : "control_flow";
      const elf = findFile(dir, program);
      if (!elf) continue;
      const quiet: string[] = ["--quiet", "--stat:insn", "--elf", elf, "--pt", join(dir, "reference", bin)];
      assert.deepEqual(
        await run(dir, ["flow", "--jobs", "3", ...quiet]),
        await run(dir, ["flow", "--jobs", "1", ...quiet]),
      );
      for (const decoder of ["--block-decoder", "--insn-decoder"]) {
        const args = [decoder, "--no-inst", "--elf", elf, "--pt", join(dir, "reference", bin)];
        const one = await run(dir, ["flow", "--jobs", "1", ...args]);
        const three = await run(dir, ["flow", "--jobs", "3", ...args]);
        assert.deepEqual(three, one, bin);
        decoded += one.stdout.match(/^[0-9a-f]{16}$/gm)?.length ?? 0;
      }
    }
    assert.ok(used.pieces - before > 20, `${used.pieces - before} pieces`);
    assert.ok(decoded > 1000, `${decoded} instructions`);
  });
});

describe("flow --jobs on generated programs", () => {
  test("compressed returns across PSBs, overflows, TSX: the same flow from pieces", async () => {
    // The generator compresses returns against one stack over the whole trace, across
    // PSBs (hardware does not): pieces whose fresh return stack underflows make the
    // merge decode the rest again, and the flow must still come out the same.
    const dir = mkdtempSync(join(tmpdir(), "ptkit-jobs-flow-"));
    let cut = 0;
    for (let seed = 1; seed <= 6; seed++) {
      const program = makeProgram({ seed, steps: 3000, events: 0.02 });
      const [section] = program.image.sections;
      assert.ok(section && program.image.sections.length === 1);
      const code = new Uint8Array(Number(section.end - section.start));
      const start = section.start;
      assert.equal(
        program.image.read(Number(start >> 32n), Number(start & 0xffffffffn), code, code.length),
        code.length,
      );
      writeFileSync(join(dir, "code.bin"), code);
      writeFileSync(join(dir, "trace.pt"), program.trace);
      for (const decoder of ["--block-decoder", "--insn-decoder"]) {
        const args = [decoder, "--raw", `code.bin:0x${start.toString(16)}`, "--pt", "trace.pt"];
        const before = used.runs;
        const one = await run(dir, ["flow", "--jobs", "1", ...args]);
        const three = await run(dir, ["flow", "--jobs", "3", ...args]);
        assert.deepEqual(three, one, `seed ${seed} ${decoder}`);
        if (used.runs > before) cut++;
        const quiet = ["--quiet", "--stat:insn", ...args];
        assert.deepEqual(
          await run(dir, ["flow", "-j", "3", ...quiet]),
          await run(dir, ["flow", "-j", "1", ...quiet]),
        );
      }
    }
    assert.ok(cut >= 10, `${cut} runs were cut`);
  });

  test("without -j, printed instructions stay on one thread (their text is not held); --quiet splits", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ptkit-jobs-default-"));
    const program = makeProgram({ seed: 3, steps: 3000, events: 0.02 });
    const [section] = program.image.sections;
    assert.ok(section);
    const code = new Uint8Array(Number(section.end - section.start));
    program.image.read(Number(section.start >> 32n), Number(section.start & 0xffffffffn), code, code.length);
    writeFileSync(join(dir, "code.bin"), code);
    writeFileSync(join(dir, "trace.pt"), program.trace);
    const args = ["--raw", `code.bin:0x${section.start.toString(16)}`, "--pt", "trace.pt"];
    let before = used.runs;
    const printed = await run(dir, ["flow", ...args]);
    assert.equal(used.runs, before, "printed instructions were decoded in pieces");
    assert.match(printed.stdout, /^[0-9a-f]{16} {2}call /m);
    before = used.runs;
    // (A decoder named: unnamed, errors and counts alone go to the decision graph's walk first.)
    await run(dir, ["flow", "--block-decoder", "--quiet", "--stat:insn", ...args]);
    assert.ok(used.runs > before, "--quiet was not decoded in pieces");
  });
});

/** The first file called `name` under `dir`. */
function findFile(dir: string, name: string): string | undefined {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const found = findFile(p, name);
      if (found) return found;
    } else if (e.name === name) return p;
  }
  return undefined;
}

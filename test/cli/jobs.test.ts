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
import { WorkerPool } from "../../src/cli/node-workers.js";
import { main } from "../../src/cli/ptkit.js";
import { captureIo } from "../conformance/ptt.js";
import { CORPUS_DIR, corpusPath } from "../corpus.js";

/** Workers kept for the whole file; pieces as small as 32 bytes, so that even tiny traces are cut. */
const pool = new WorkerPool(true, 32);
after(() => pool.close());

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

async function run(dir: string, argv: string[]): Promise<Run> {
  const io = captureIo(dir);
  io.chunks = pool;
  const code = await main(argv, io);
  return { stdout: io.out.join(""), stderr: io.err.join(""), code };
}

/** The output of stats without its timing line. */
function untimed(r: Run): Run {
  return { ...r, stdout: r.stdout.replace(/^decoded in .*$/m, "") };
}

/** Run `command args file` with --jobs 1 and --jobs 3; the outputs must be the same. */
async function sameBothWays(dir: string, command: string, args: string[], file: string): Promise<Run> {
  const one = await run(dir, [command, "--jobs", "1", ...args, file]);
  const three = await run(dir, [command, "--jobs", "3", ...args, file]);
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

const traces = corpusTraces();
const skip = traces.length === 0 ? `corpus ${CORPUS_DIR} is absent` : false;

describe("stats --jobs", () => {
  test("every corpus trace: the same statistics from pieces as from one decode", { skip }, async () => {
    for (const t of traces) await sameBothWays(dirname(t), "stats", ["--max-errors", "1000"], t);
  });

  test("a generated trace cut into pieces at its PSBs", async () => {
    const path = generated(1 << 20);
    const one = await sameBothWays(dirname(path), "stats", [], path);
    assert.match(one.stdout, /psb segments +256\n/);
  });

  test("corrupt bytes inside pieces and a truncated end: the same errors and exit status", async () => {
    const path = generated(1 << 18, (b) => {
      // A bad opcode in the middle of a PSB+ (its resync goes to the next PSB), junk over a
      // PSB (a piece starts where the decode must not), and a packet cut off at the end.
      b.fill(0xd9, 4096 * 5 + 3, 4096 * 5 + 5);
      b.fill(0x59, 4096 * 9 - 2, 4096 * 9 + 9);
      return b.subarray(0, b.length - 1);
    });
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

  test("a bad --jobs is an error", async () => {
    const r = await run(tmpdir(), ["stats", "--jobs", "0", "x.pt"]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "ptkit stats: --jobs: bad argument: 0.\n");
  });
});

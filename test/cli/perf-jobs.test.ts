/**
 * `ptkit perf --jobs`: the analysis outputs with each stream walked on a worker thread
 * and its log replayed on the command's (node/walk-threads.ts, analysis/walk-log.ts)
 * are byte for byte those of one thread, from the modules (the thread imports its
 * code) and from the executable's bundle (the thread loads it through the code
 * cache). The replay's equality on every kind of file the walk takes is tested
 * without threads (test/perf/perf-fast-path.test.ts, walk-threads.ts there).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { CHUNK_WORKER, main } from "../../src/cli/ptkit.js";
import { walkThreads } from "../../src/node/walk-threads.js";
import { WALK_APART_BYTES } from "../../src/session/perf-session.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-jobs-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const CLI = fileURLToPath(new URL("../../cli/ptkit.js", import.meta.url));

const HASE = "real/hase";
const CAPTURES = ["2018-05/control_flow-20180515T180451", "2018-05/loopy-20180514T145114"];
const OUTPUTS = ["--timeline", "t.json", "--folded", "f.txt", "--perfetto", "p.pftrace"];

interface Run {
  code: number;
  out: string;
  err: string;
  files: string[];
}

function files(): string[] {
  return ["t.json", "f.txt", "p.pftrace"].map((f) =>
    existsSync(join(dir, f)) ? readFileSync(join(dir, f), "latin1") : "",
  );
}

/**
 * `ptkit perf ARGS` in this process, with worker threads for its walks (of traces of
 * any size, or with `least` "default", of those the command walks apart by itself);
 * the outcome of each walk the threads logged (status 0: walked, replayed to its
 * end) and how many threads started.
 */
async function inProcess(
  args: string[],
  least: "any" | "default" = "any",
): Promise<Run & { walks: number[]; started: number }> {
  const io = captureIo(dir);
  const walks: number[] = [];
  let started = 0;
  io.perfWalks = (command) => {
    const t = walkThreads(CHUNK_WORKER, dir, command);
    const start = (i: number) => {
      started++;
      const log = t.start(i);
      return () => {
        const next = log();
        if (!(next instanceof Float64Array)) walks.push(next.status);
        return next;
      };
    };
    const threads = { threads: t.threads, start, stop: () => t.stop() };
    return least === "any" ? { ...threads, minTrace: 0 } : threads;
  };
  const code = await main(["perf", ...args], io);
  return { code, out: io.out.join(""), err: io.err.join(""), files: files(), walks, started };
}

/** `ptkit perf ARGS` as the executable runs it (walking traces of any size apart, unless `least` is "default"). */
function executable(args: string[], least: "any" | "default" = "any"): Run {
  const env = { ...process.env, PTKIT_PERF_WALK_MIN: least === "any" ? "0" : "" };
  const r = spawnSync(process.execPath, [CLI, "perf", ...args], { cwd: dir, encoding: "utf8", env });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr, files: files() };
}

describe("ptkit perf --jobs on the HASE captures", { skip: skipUnlessCorpus(HASE, "2018-05") }, () => {
  for (const capture of CAPTURES) {
    const data = corpusPath(HASE, capture, "perf.data.1")!;
    const args = ["--symfs", corpusPath(HASE, capture, "binaries")!, "-q", ...OUTPUTS, data];

    test(`${capture}: the walk on a thread, from the modules, to the same outputs`, async () => {
      const one = await inProcess(["--jobs", "1", ...args]);
      assert.equal(one.code, 0, one.err);
      assert.deepEqual(one.walks, []);
      const two = await inProcess(["--jobs", "2", ...args]);
      assert.deepEqual(two.walks, [0], "the walk was not on a thread, replayed to its end");
      assert.equal(two.started, 1);
      assert.deepEqual({ ...two, walks: [], started: 0 }, one);
    });

    test(`${capture}: the walk on a thread, from the executable's bundle, to the same outputs`, () => {
      const one = executable(["--jobs", "1", ...args]);
      assert.equal(one.code, 0, one.err);
      assert.deepEqual(executable(["--jobs", "2", ...args]), one);
    });
  }

  test("a CPU's trace under the least a thread pays for is walked on the command's thread", async () => {
    for (const capture of CAPTURES) {
      const data = corpusPath(HASE, capture, "perf.data.1")!;
      assert.ok(statSync(data).size < WALK_APART_BYTES, "the capture is small");
      const args = ["--symfs", corpusPath(HASE, capture, "binaries")!, "-q", ...OUTPUTS, data];
      const one = await inProcess(["--jobs", "1", ...args]);
      assert.equal(one.code, 0, one.err);
      // No thread started, not even the one that starts before the file is read.
      const two = await inProcess(["--jobs", "2", ...args], "default");
      assert.equal(two.started, 0, capture);
      assert.deepEqual(two, one);
      const exe = executable(["--jobs", "1", ...args]);
      assert.equal(exe.code, 0, exe.err);
      assert.deepEqual(executable(["--jobs", "2", ...args], "default"), exe);
    }
  });

  test("outputs a walk apart does not pay for are walked on the command's thread", async () => {
    const capture = CAPTURES[0]!;
    const data = corpusPath(HASE, capture, "perf.data.1")!;
    const symfs = corpusPath(HASE, capture, "binaries")!;
    for (const outputs of [
      ["--latency", "l.txt"],
      ["--folded", "f.txt"],
      ["--timeline", "t.json", "--latency", "l.txt"],
    ]) {
      const r = await inProcess(["--jobs", "2", "--symfs", symfs, "-q", ...outputs, data]);
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(r.walks, [], outputs.join(" "));
    }
  });

  test("a bad --jobs is an error", async () => {
    const r = await inProcess(["--jobs", "0", "-q", "--timeline", "t.json", "x.data"]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^ptkit perf: --jobs: bad argument: 0\n/);
  });
});

/**
 * `-` is standard input for `ptkit perf` and `ptkit perf-dump`: a child ptkit fed
 * quipper's piped perf.data through a pipe prints what the in-process command prints
 * for the file itself.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runPerfDump } from "../../src/cli/perf/dump.js";
import { runPerf } from "../../src/cli/perf/perf.js";
import type { SessionIo } from "../../src/session/io.js";
import { captureIo } from "../conformance/ptt.js";
import { CORPUS_DIR, corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "../perf/home.js";

const PIPED = ["real/quipper-perf-data", "perf.data.piped.intel_pt-4.14"] as const;
/** The ptkit executable of this build (tests run from <outdir>/test/cli). */
const MAIN = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

function viaPipe(command: string, args: string[]): { out: string; err: string; status: number | null } {
  const r = spawnSync(process.execPath, [MAIN, command, ...args, "-"], {
    input: readFileSync(corpusPath(...PIPED)!),
    cwd: CORPUS_DIR,
    env: { ...process.env, HOME: EMPTY_HOME },
    encoding: "utf8",
  });
  return { out: r.stdout, err: r.stderr, status: r.status };
}

function inProcess(
  run: (argv: string[], io: SessionIo) => number,
  args: string[],
): { out: string; err: string; code: number } {
  const io = captureIo(corpusPath(PIPED[0])!);
  const code = run([...args, PIPED[1]], io);
  return { out: io.out.join(""), err: io.err.join(""), code };
}

test("ptkit perf - reads a pipe", { skip: skipUnlessCorpus(...PIPED) }, () => {
  for (const args of [[], ["--jsonl"]]) {
    const want = inProcess((argv, io) => runPerf(argv, io, EMPTY_HOME), args);
    assert.equal(want.code, 0);
    assert.match(want.out, /\[stream idx|"type":"stream"/);
    const got = viaPipe("perf", args);
    assert.equal(got.status, 0, got.err);
    assert.equal(got.out, want.out);
    assert.equal(got.err, want.err.replaceAll("perf.data.piped.intel_pt-4.14", "-"));
  }
});

test("ptkit perf-dump - reads a pipe", { skip: skipUnlessCorpus(...PIPED) }, () => {
  const want = inProcess(runPerfDump, []);
  assert.equal(want.code, 0);
  assert.match(want.out, /AUXTRACE/);
  const got = viaPipe("perf-dump", []);
  assert.equal(got.status, 0, got.err);
  assert.equal(got.out, want.out);
});

test("ptkit perf - with nothing on standard input says so", () => {
  const r = spawnSync(process.execPath, [MAIN, "perf", "-"], { input: "", encoding: "utf8" });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^ptkit perf: -: not a perf.data file/);
});

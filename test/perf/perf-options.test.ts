/**
 * `ptkit perf` options that would select or find nothing are said at once, on a
 * HASE capture (one stream, CPU 1): --cpu naming a CPU without trace and a reversed
 * --time-range are errors, --sym without --branches/--calls too; --symfs or
 * --buildid-dir naming no directory is a warning and decoding goes on.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import type { AuxStream } from "../../src/perf/index.js";
import { cpuProblem } from "../../src/session/perf-checks.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";

const RUN = ["real", "hase", "2018-05", "loopy-20180514T145114"];
const skip = skipUnlessCorpus(...RUN, "perf.data.1");
const tmp = mkdtempSync(join(tmpdir(), "ptkit-perf-options-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

function perf(args: string[]): { code: number; out: string; err: string } {
  const io = captureIo(corpusPath(...RUN) ?? ".");
  const code = runPerf([...args, "perf.data.1"], io, EMPTY_HOME);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

/** An error: one line, exit 1, nothing decoded. */
function assertError(r: { code: number; out: string; err: string }, message: string): void {
  assert.equal(r.code, 1);
  assert.equal(r.out, "");
  assert.equal(r.err, `ptkit perf: ${message}\n`);
}

describe("ptkit perf options that select nothing", { skip }, () => {
  test("--cpu with no trace of that CPU: an error listing the CPUs there are", () => {
    assertError(
      perf(["--cpu", "99"]),
      "--cpu 99: no trace of CPU 99 in perf.data.1 (its trace is of CPU 1).",
    );
    const one = perf(["--symfs", "binaries", "--cpu", "1"]);
    assert.equal(one.code, 0);
    assert.equal(one.err, "");
    assert.match(one.out, /^\[stream idx 1 cpu 1 tid \d+: 648 bytes\]\n/);
  });

  test("--tid of a thread never seen running: an error listing threads that are", () => {
    const r = perf(["--tid", "1"]);
    assert.equal(r.code, 1);
    assert.equal(r.out, "");
    assert.match(
      r.err,
      /^ptkit perf: --tid 1: perf\.data\.1 never shows thread 1 running \(threads seen running: 0, 8, 14, [\d, ]+, \.\.\. \(20 in all\)\)\.\n$/,
    );
    const traced = perf(["--symfs", "binaries", "--tid", "31552"]);
    assert.equal(traced.code, 0);
    assert.match(traced.out, /^0{10}4000e8$/m);
  });

  test("a reversed --time-range is an error, as TSC values and as perf times", () => {
    assertError(perf(["--time-range", "5,1"]), "--time-range: 5 is after 1: want <from>,<to>.");
    assertError(
      perf(["--time-range", "88752.4,88752.3"]),
      "--time-range: 88752.4 is after 88752.3: want <from>,<to>.",
    );
    // The same bounds in order: the trace between them.
    const inRange = perf(["--symfs", "binaries", "--time-range", "88752.3,88752.4"]);
    assert.equal(inRange.code, 0);
    assert.match(inRange.out, /^0{10}4000e8$/m);
  });

  test("--sym without --branches or --calls is an error", () => {
    const r = perf(["--sym"]);
    assert.equal(r.code, 1);
    assert.equal(r.out, "");
    assert.match(r.err, /^ptkit perf: --sym needs --branches or --calls\.\n/);
    assert.equal(perf(["--symfs", "binaries", "--branches", "--sym"]).code, 0);
  });

  test("--symfs or --buildid-dir naming no directory: a warning, decoding goes on", () => {
    const missing = join(tmp, "missing");
    const file = join(tmp, "a-file");
    writeFileSync(file, "");
    const r = perf(["--symfs", missing]);
    assert.equal(r.code, 0);
    assert.equal(
      r.err.split("\n")[0],
      `ptkit perf: warning: --symfs ${missing}: no such directory; binaries are looked for at their recorded paths only.`,
    );
    assert.match(r.out, /^\[stream idx 1 cpu 1 /);
    assert.match(
      perf(["--sysroot", file]).err,
      /^ptkit perf: warning: --sysroot .*a-file: it is a file, not a directory;/,
    );
    const cache = perf(["--symfs", "binaries", "--buildid-dir", missing]);
    assert.equal(cache.code, 0);
    assert.equal(
      cache.err,
      `ptkit perf: warning: --buildid-dir ${missing}: no such directory; the build-id cache is not used.\n`,
    );
    // Directories that are there: no warning.
    assert.equal(perf(["--symfs", "binaries", "--buildid-dir", tmp]).err, "");
  });
});

test("cpuProblem lists the CPUs with trace, or says there are none or the trace is per thread", () => {
  const stream = (cpu: number) => ({ cpus: [cpu] }) as AuxStream;
  assert.equal(cpuProblem("f", 2, [stream(0), stream(2)]), undefined);
  assert.equal(
    cpuProblem("f", 1, [stream(2), stream(0)]),
    "--cpu 1: no trace of CPU 1 in f (its trace is of CPUs 0, 2).",
  );
  assert.match(cpuProblem("f", 1, [stream(-1)])!, /recorded per thread, not per CPU: use --tid\)\.$/);
  assert.match(cpuProblem("f", 1, [])!, /\(it has no Intel PT trace\)\.$/);
});

/**
 * `ptkit perf` (runPerf) on the HASE perf.data captures with their static
 * binaries: the executed instructions are exactly those `perf script
 * --itrace=i0ns -F ip` printed (reference/*.perf-script-insn.txt), in order,
 * full-trace and snapshot mode alike.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";

const DIR = "real/hase";
const BIN_0515 = (run: string, prog: string) =>
  `2018-05/${run}/binaries/home/joerg/git/hase/tests/bin/${prog}/${prog}`;
const CASES = [
  [
    "2018-04-04/control_flow/control_flow-20180404T163033.perf",
    "2018-04-04/control_flow/control_flow",
    "control_flow-20180404",
  ],
  ["2018-04-04/loopy/loopy-20180404T162955.perf", "2018-04-04/loopy/loopy", "loopy-20180404"],
  [
    "2018-05/control_flow-20180515T180451/perf.data.1",
    BIN_0515("control_flow-20180515T180451", "control_flow"),
    "control_flow-20180515",
  ],
  ["2018-05/loopy-20180514T145114/perf.data.1", BIN_0515("loopy-20180514T145114", "loopy"), "loopy-20180514"],
] as const;

function run(args: string[]): { out: string; err: string; code: number } {
  const io = captureIo(corpusPath(DIR) ?? ".");
  const code = runPerf(args, io, EMPTY_HOME);
  return { out: io.out.join(""), err: io.err.join(""), code };
}

describe("ptkit perf", () => {
  test("--help, and bad arguments", () => {
    assert.match(run(["--help"]).out, /^usage: ptkit perf \[<options>\] <perf.data>[\s\S]*examples:/);
    assert.equal(run([]).code, 1);
    assert.match(run(["--cpu", "x", "f"]).err, /--cpu: bad list: x \(want e.g. 0,2-3\)/);
  });

  for (const [perfData, elf, ref] of CASES) {
    test(`${ref}: perf script's instructions`, { skip: skipUnlessCorpus(DIR, perfData) }, () => {
      const r = run(["--elf", elf, perfData]);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.err, "");
      const lines = r.out.split("\n").filter((l) => l !== "");
      assert.match(lines[0]!, /^\[stream idx \d cpu \d tid \d+: \d+ bytes\]$/);
      assert.ok(!lines.some((l) => /^\[[0-9a-f]+: /.test(l)), "no decode errors");
      const ours = lines.filter((l) => !l.startsWith("[")).map((l) => BigInt(`0x${l}`));
      const want = readFileSync(corpusPath(DIR, "reference", `${ref}.perf-script-insn.txt`)!, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => BigInt(`0x${l.trim()}`));
      assert.deepEqual(ours, want);
    });
  }

  test("a CPU without a stream: an error listing the CPUs there are", {
    skip: skipUnlessCorpus(DIR, CASES[1][0]),
  }, () => {
    const r = run(["--elf", CASES[1][1], "--cpu", "0", CASES[1][0]]);
    assert.equal(r.code, 1);
    assert.equal(r.out, "");
    assert.equal(
      r.err,
      `ptkit perf: --cpu 0: no trace of CPU 0 in ${CASES[1][0]} (its trace is of CPU 2).\n`,
    );
  });
});

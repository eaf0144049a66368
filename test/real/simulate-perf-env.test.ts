/**
 * `ptkit simulate --env perf-user` against real captures (issue 16 item 3): HASE's
 * `loopy` and `control_flow` (static, non-PIE), run under valgrind with the
 * arguments perf ran them with (`a b c d e`, from the perf.data's cmdline), each with
 * its capture's CPU profile and settings. The packet streams are compared packet for
 * packet, kinds and payloads (IP packets with their IPBytes and compressed IP), with
 * the timing packets (TSC, MTC, CYC, TMA, CBR) and PAD left out on both sides. The
 * captures are the AUX data `ptkit perf-dump --aux` extracts from the perf.data files
 * (`real/hase/reference/*-aux-idxN.bin`; the README's extract notes say which).
 *
 * - loopy: equal, on Skylake (2018-04-04, i5-6500: `--cpu skylake --env perf-user
 *   --user --tsc --mtc 3 --psb-freq 3`) and Broadwell (2018-05, i7-5600U: `--cpu
 *   broadwell --env perf-user --user --tsc`).
 * - control_flow (Skylake 2018-04 and Broadwell 2018-05, each its own build): equal
 *   up to musl's auxv walk (valgrind's auxv is not the kernel's), which the tests
 *   name; both page faults, on the code page at the entry point and on the data page
 *   at `call *(%rbx)` reading .init_array (page 0x600000), are in model and capture
 *   alike. On Broadwell the envp walk's 44 outcomes are one long TNT in both.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { faultFups, firstDifference, packets } from "./packet-list.js";

const PROGRAMS = {
  loopy: ["real", "hase", "2018-04-04", "loopy", "loopy"],
  control_flow: ["real", "hase", "2018-04-04", "control_flow", "control_flow"],
  // The Broadwell capture's own build (2018-05).
  control_flow_bdw: [
    "real",
    "hase",
    "2018-05",
    "control_flow-20180515T180451",
    ...["binaries", "home", "joerg", "git", "hase", "tests", "bin", "control_flow", "control_flow"],
  ],
} as const;

const SKYLAKE = [
  "--cpu",
  "skylake",
  "--env",
  "perf-user",
  "--user",
  "--tsc",
  "--mtc",
  "3",
  "--psb-freq",
  "3",
];
const BROADWELL = ["--cpu", "broadwell", "--env", "perf-user", "--user", "--tsc"];

const skip =
  skipUnlessCorpus(...PROGRAMS.loopy) ||
  skipUnlessCorpus(...PROGRAMS.control_flow) ||
  skipUnlessCorpus(...PROGRAMS.control_flow_bdw) ||
  skipUnlessCorpus("real", "hase", "reference") ||
  (valgrindVersion() === undefined && "valgrind is not installed");

describe("ptkit simulate --env perf-user against the HASE captures, timing packets aside", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-env-"));
  if (!skip)
    for (const [name, path] of Object.entries(PROGRAMS)) {
      copyFileSync(corpusPath(...path)!, join(dir, name));
      spawnSync("chmod", ["+x", join(dir, name)]);
    }

  /** The model's packets for `program a b c d e` under `options`. */
  async function model(
    program: keyof typeof PROGRAMS,
    options: string[],
    tag: string,
    env?: NodeJS.ProcessEnv,
  ): Promise<string[]> {
    const io = captureIo(dir);
    const trace = join(dir, `${program}-${tag}.pt`);
    const args = ["simulate", ...options, "-o", trace, "--", join(dir, program), "a", "b", "c", "d", "e"];
    const saved = process.env;
    if (env !== undefined) process.env = env;
    let code: number;
    try {
      code = await main(args, io);
    } finally {
      process.env = saved;
    }
    assert.equal(code, 0, io.err.join(""));
    assert.match(io.out.join(""), /env {10}perf-user: 1 code page faults, \d+ data page faults/);
    return packets(new Uint8Array(readFileSync(trace)));
  }

  function capture(ref: string): string[] {
    return packets(new Uint8Array(readFileSync(corpusPath("real", "hase", "reference", `${ref}.bin`)!)));
  }

  test("loopy, Skylake (loopy-20180404, aux idx 2): equal packet for packet", async () => {
    const want = capture("loopy-20180404-aux-idx2");
    const got = await model("loopy", SKYLAKE, "skylake");
    assert.equal(want.length, 26);
    assert.deepEqual(got, want);
  });

  test("loopy, Broadwell (loopy-20180514, aux idx 1): equal packet for packet", async () => {
    const want = capture("loopy-20180514-aux-idx1");
    const got = await model("loopy", BROADWELL, "broadwell");
    assert.equal(want.length, 67);
    assert.deepEqual(got, want);
  });

  test("control_flow, Skylake (control_flow-20180404, aux idx 1): equal up to the auxv walk, the same page faults", async () => {
    const want = capture("control_flow-20180404-aux-idx1");
    // musl's __init_libc walks envp, then auxv: 19 environment variables under valgrind
    // make the envp walk the capture's (found by trying counts); auxv is valgrind's own.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    for (let k = 1; k <= 18; k++) env[`PTKIT_PAD${k}`] = "x";
    const got = await model("control_flow", SKYLAKE, "skylake-env", env);
    // The environment (PSB+, MODE.Exec, TIP.PGE 0x400202, the code page's fault) and
    // the first 24 branches agree; the 12th packet is the first TNT of the auxv walk.
    const at = firstDifference(got, want);
    assert.equal(at, 11);
    assert.deepEqual(got.slice(0, 7), [
      "psb 0 0 0:0",
      "psbend 0 0 0:0",
      "mode.exec 0 0 0:0",
      "tip.pge 3 0 0:400202",
      "fup 3 0 0:400202",
      "tip.pgd 0 0 0:0",
      "tip.pge 1 0 0:202",
    ]);
    assert.equal(want[at], "tnt.8 6 0 0:38");
    assert.equal(got[at], "tnt.8 6 0 0:5");
    // The page faults (a FUP then TIP.PGD): the entry point's code page, then the data
    // page of .init_array, read by `call *(%rbx)`.
    assert.deepEqual(faultFups(got), ["fup 3 0 0:400202", "fup 3 0 0:400560"]);
    assert.deepEqual(faultFups(want), faultFups(got));
  });

  test("control_flow, Broadwell (control_flow-20180515, aux idx 1): equal up to the auxv walk, the same page faults", async () => {
    const want = capture("control_flow-20180515-aux-idx1");
    // As on Skylake, with this capture's environment: 24 variables under valgrind.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    for (let k = 1; k <= 23; k++) env[`PTKIT_PAD${k}`] = "x";
    const got = await model("control_flow_bdw", BROADWELL, "broadwell-env", env);
    const at = firstDifference(got, want);
    assert.equal(at, 17);
    // The enable's PSB+ (BDM70 form), the fault at the entry point (PSB+ again: TraceEn
    // toggled in the kernel), then the envp walk: 44 outcomes in one long TNT.
    assert.deepEqual(got.slice(0, 3), ["psb 0 0 0:0", "psbend 0 0 0:0", "psb 0 0 0:0"]);
    assert.equal(got[16], "tnt.64 44 0 fff:ffff8aaa");
    assert.equal(want[at], "tnt.64 44 0 aaa:aaa1bffb");
    // Valgrind's auxv (its entries depend on the host): only where it starts is fixed.
    assert.match(got[at]!, /^tnt\.64 44 0 aaa:aaaa/);
    assert.deepEqual(faultFups(got), ["fup 3 0 0:40017d", "fup 3 0 0:400550"]);
    assert.deepEqual(faultFups(want), faultFups(got));
  });
});

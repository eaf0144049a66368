/**
 * `ptkit simulate --env perf-kernel` (issue 16 item 3): `perf record -e intel_pt//k`
 * around HASE's `loopy` (static; valgrind runs it): tracing at CPL 0 only, enabled
 * in the kernel during exec. The program's own code writes nothing; each kernel visit
 * (exec's return to the entry point, the entry point's page fault, 7 system calls,
 * the last of which, exit_group, never returns) is a TIP.PGE into the stand-in
 * kernel and a TIP.PGD out of it. The trace must decode with ptkit flow (the image
 * `simulate` writes beside it) and with libipt (the harness's insn mode), each to
 * exactly the kernel's instructions. perf-all (//uk) traces both sides: its decode
 * holds every instruction of the execution.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import { buildLibiptHarness, runInsnDecoder } from "../../tools/libipt/harness.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { packets } from "./packet-list.js";

const LOOPY = ["real", "hase", "2018-04-04", "loopy", "loopy"] as const;
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-kernel-"));
const harness = buildLibiptHarness(dir);
if ("error" in harness) throw new Error(harness.error);
const skip =
  skipUnlessCorpus(...LOOPY) ||
  (valgrindVersion() === undefined && "valgrind is not installed") ||
  ("skip" in harness && harness.skip);

/** Run ptkit in `dir`: exit code, stdout, stderr. */
async function ptkit(...args: string[]) {
  const io = captureIo(dir);
  const code = await main(args, io);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

/** `simulate --env <env>` of loopy; the trace's path. */
async function simulate(env: string): Promise<{ trace: string; out: string }> {
  const trace = join(dir, `${env}.pt`);
  const r = await ptkit(
    "simulate",
    "--cpu",
    "skylake",
    "--env",
    env,
    "--tsc",
    "-o",
    trace,
    "--",
    join(dir, "loopy"),
    "a",
    "b",
    "c",
    "d",
    "e",
  );
  assert.equal(r.code, 0, r.err);
  return { trace, out: r.out };
}

/** The instruction IPs ptkit flow decodes (with the image simulate wrote), and its error lines. */
async function ptkitIps(trace: string): Promise<string[]> {
  const r = await ptkit("flow", `@${trace}.args`, "--pt", trace);
  assert.equal(r.code, 0, r.err);
  assert.doesNotMatch(r.out, /error/);
  return r.out
    .split("\n")
    .filter((l) => /^[0-9a-f]{16} /.test(l))
    .map((l) => `0x${l.slice(0, 16).replace(/^0+/, "")}`);
}

/** The instruction IPs libipt decodes, over the ranges in the .args file's comments. */
function libiptIps(trace: string): string[] {
  const args = readFileSync(`${trace}.args`, "utf8");
  const maps = [...args.matchAll(/^# --raw (.+)$/gm)].map((m) => m[1]!);
  const out = runInsnDecoder((harness as { bin: string }).bin, trace, maps, "6/78");
  assert.ok(Array.isArray(out), Array.isArray(out) ? "" : out.error);
  assert.deepEqual(
    out.filter((l) => /^[EX] /.test(l)),
    [],
  );
  return out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!);
}

describe("ptkit simulate --env perf-kernel and perf-all", { skip }, () => {
  if (!skip) {
    copyFileSync(corpusPath(...LOOPY)!, join(dir, "loopy"));
    spawnSync("chmod", ["+x", join(dir, "loopy")]);
  }

  test("perf-kernel: only the kernel's visits, decoded alike by ptkit and libipt", async () => {
    const { trace, out } = await simulate("perf-kernel");
    assert.match(out, /env {10}perf-kernel: 1 code page faults, 0 data page faults, 1 TraceEn toggles/);
    const list = packets(new Uint8Array(readFileSync(trace)));
    // Enabled at CPL 0 in exec: the PSB+ has MODE.Exec and the kernel's FUP.
    assert.deepEqual(list.slice(0, 4), [
      "psb 0 0 0:0",
      "mode.tsx 0 0 0:0",
      "mode.exec 0 0 0:0",
      "fup 3 0 ffff:81000010",
    ]);
    // No user IP in any packet: TIP.PGE and FUP only at the kernel (compressed IPs keep its high bytes).
    for (const p of list)
      if (/^(tip|fup)/.test(p) && !p.startsWith("tip.pgd"))
        assert.match(p, / (3 0 ffff:810000[01]0|1 0 0:(10|0))$/, p);
    const iret = "0xffffffff81000010";
    const sysret = "0xffffffff81000000";
    // exec's IRETQ, the page fault's, 6 system calls that return (exit_group does not).
    const want = [iret, iret, ...Array(6).fill(sysret)];
    assert.deepEqual(await ptkitIps(trace), want);
    assert.deepEqual(libiptIps(trace), want);
  });

  test("perf-all: user and kernel, every instruction decoded by both", async () => {
    const { trace, out } = await simulate("perf-all");
    const executed = Number(/^instructions (\d+)$/m.exec(out)?.[1]);
    const ptkitList = await ptkitIps(trace);
    assert.equal(ptkitList.length, executed);
    assert.deepEqual(libiptIps(trace), ptkitList);
  });
});

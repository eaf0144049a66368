/**
 * The two commands the perf script comparisons run side by side: Linux perf's `perf
 * script` as a process and `ptkit perf` in this process, both with HOME an empty
 * directory (no build-id cache of the host's comes into it), and what each printed.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { runPerf } from "../../src/cli/perf/perf.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";

/** What a command printed, and its exit status (null: killed). */
export interface ScriptRun {
  out: string;
  err: string;
  status: number | null;
}

/** `perf script ARGS` in `cwd` (default: this process's), HOME `home`. */
export function perfScriptRun(args: readonly string[], cwd?: string, home = EMPTY_HOME): ScriptRun {
  const r = spawnSync("perf", ["script", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, HOME: home },
    maxBuffer: 1 << 26,
  });
  const killed = r.signal ? ` (signal ${r.signal})` : "";
  return { out: r.stdout, err: `${r.stderr}${killed}`, status: r.status };
}

/** `ptkit perf ARGS` in `cwd`, HOME `home`. */
export function ptkitPerfRun(args: readonly string[], cwd: string, home = EMPTY_HOME): ScriptRun {
  const io = captureIo(cwd);
  const status = runPerf([...args], io, home);
  return { out: io.out.join(""), err: io.err.join(""), status };
}

/** The output of a run that must succeed: the test fails with its stderr otherwise. */
export function okOut(run: ScriptRun, what = "the command"): string {
  assert.equal(run.status, 0, `${what}: ${run.err}`);
  return run.out;
}

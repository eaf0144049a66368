/**
 * The libipt comparison: the shared libipt harness (tools/libipt/harness.c, our own
 * program over libipt's public packet-decoder API) compiled into bench/.cache/ and run
 * in its --bench mode on the same trace file. Skips with a reason when cc or
 * libipt-dev is missing.
 */
import { spawnSync } from "node:child_process";
import { buildLibiptHarness, INSTALL_HINT } from "../tools/libipt/harness.js";
import { CACHE_DIR } from "./paths.js";

export interface LibiptResult {
  bytes: number;
  packets: number;
  errors: number;
  bestNs: number;
  runsNs: number[];
  /** Per-type counts by libipt name; MODE is split into mode.exec / mode.tsx. */
  counts: Record<string, number>;
  /** The compiler command line used. */
  compile: string;
}

/** `failed` marks a harness that built but did not run through (a real failure, not a skip). */
export type LibiptOutcome =
  | { ok: true; result: LibiptResult }
  | { ok: false; skipped: string; failed?: boolean };

/** Compile (if needed) and run the libipt harness on `tracePath`, best of `runs`. */
export function runLibipt(tracePath: string, runs: number): LibiptOutcome {
  const b = buildLibiptHarness(CACHE_DIR);
  if ("skip" in b) return { ok: false, skipped: b.skip };
  if ("error" in b) {
    const msg = b.error.split("\n").slice(-3).join(" | ");
    return { ok: false, skipped: `the harness does not compile: ${msg} ${INSTALL_HINT}` };
  }
  const r = spawnSync(b.bin, ["--bench", String(runs), tracePath], { encoding: "utf8", maxBuffer: 1 << 20 });
  if (r.error || r.status !== 0) {
    const why = (r.stderr || String(r.error ?? `exit status ${r.status}`)).trim();
    return { ok: false, skipped: `${b.bin} failed: ${why}`, failed: true };
  }
  const j = JSON.parse(r.stdout) as {
    bytes: number;
    packets: number;
    errors: number;
    best_ns: number;
    runs_ns: number[];
    counts: Record<string, number>;
  };
  return {
    ok: true,
    result: {
      bytes: j.bytes,
      packets: j.packets,
      errors: j.errors,
      bestNs: j.best_ns,
      runsNs: j.runs_ns,
      counts: j.counts,
      compile: b.command,
    },
  };
}

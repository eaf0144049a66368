/**
 * The libipt comparison: compile bench/libipt/pkt-bench.c (our own harness over
 * libipt's public packet-decoder API) into bench/.cache/ and run it on the same
 * trace file. Skips with a reason when cc or libipt-dev is missing.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { CACHE_DIR, LIBIPT_SOURCE } from "./paths.js";

const HEADER = "/usr/include/intel-pt.h";
/** The C compiler: $CC when set, else cc. */
const CC = process.env.CC || "cc";
const CFLAGS = ["-O2"];
const INSTALL_HINT = "(apt-get install libipt-dev)";

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

function compilerVersion(): string | undefined {
  const r = spawnSync(CC, ["--version"], { encoding: "utf8" });
  if (r.error || r.status !== 0) return undefined;
  return r.stdout.split("\n")[0];
}

/** Build the harness if it is missing or older than its source. Returns the binary or a skip reason. */
function build(): { bin: string; command: string } | { skipped: string } {
  if (!compilerVersion())
    return { skipped: `no C compiler (${CC}) on PATH (apt-get install gcc libipt-dev)` };
  if (!existsSync(HEADER))
    return { skipped: `libipt-dev is not installed: ${HEADER} is missing ${INSTALL_HINT}` };
  mkdirSync(CACHE_DIR, { recursive: true });
  const bin = join(CACHE_DIR, "pkt-bench");
  const args = [...CFLAGS, "-o", bin, LIBIPT_SOURCE, "-lipt"];
  const command = `${CC} ${args.join(" ")}`;
  if (existsSync(bin) && statSync(bin).mtimeMs >= statSync(LIBIPT_SOURCE).mtimeMs) return { bin, command };
  const r = spawnSync(CC, args, { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    const msg = (r.stderr || String(r.error)).trim().split("\n").slice(-3).join(" | ");
    const why = /-lipt/.test(msg) ? "libipt (-lipt) does not link" : "the harness does not compile";
    return { skipped: `${why}: ${msg} ${INSTALL_HINT}` };
  }
  return { bin, command };
}

/** Compile (if needed) and run the libipt harness on `tracePath`, best of `runs`. */
export function runLibipt(tracePath: string, runs: number): LibiptOutcome {
  const b = build();
  if ("skipped" in b) return { ok: false, skipped: b.skipped };
  const r = spawnSync(b.bin, [tracePath, String(runs)], { encoding: "utf8", maxBuffer: 1 << 20 });
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

/**
 * Builds ptkit's libxdc harness, `harness.c` beside this file: our own C program over
 * the public API of libxdc (nyx-fuzz's Intel PT decoder for fuzzing), the peer of
 * `ptkit flow --afl-map` in the benchmark. Usage and output are in the C file's header.
 * libxdc is optional and never part of the repository: the harness is compiled only
 * when $PTKIT_LIBXDC names a directory holding a built `libxdc.a` and `libxdc.h`.
 *
 * Building libxdc for the benchmark (outside the repository; it needs capstone v4):
 *   apt-get install gcc libcapstone-dev        # Debian 12 has capstone 4.0.2
 *   git clone https://github.com/nyx-fuzz/libxdc /tmp/libxdc-src
 *   make -C /tmp/libxdc-src libxdc.a           # its Makefile builds with -Ofast -flto
 *   export PTKIT_LIBXDC=/tmp/libxdc-src
 *   npm run bench -- --whole                   # the libxdc pairs run; unset: skipped
 * If the toolchain rejects -flto, build with `make libxdc.a CFLAGS=-Ofast\ -fPIC`.
 * The harness is linked with -flto (libxdc's objects are LTO objects) and -lcapstone.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The C source (from dist/tools/libxdc/harness.js, three levels below the repository root). */
export const LIBXDC_HARNESS_SOURCE = fileURLToPath(
  new URL("../../../tools/libxdc/harness.c", import.meta.url),
);

/** The environment variable naming the libxdc build directory. */
export const LIBXDC_ENV = "PTKIT_LIBXDC";

/** What to do when a skip reason says something is missing. */
export const LIBXDC_HINT = `(build libxdc outside the repository and set ${LIBXDC_ENV}: see tools/libxdc/harness.ts)`;
const CFLAGS = ["-O2", "-flto", "-Wall", "-Wextra"];

export type LibxdcBuild =
  /** The compiled harness and the command line that compiled it. */
  | { bin: string; command: string }
  /** No $PTKIT_LIBXDC, no libxdc there, no compiler, no capstone: the caller skips, `skip` says why. */
  | { skip: string }
  /** Our source does not compile: `<command> failed:` and the compiler's messages. */
  | { error: string };

/**
 * Compile the harness against the libxdc in `libxdc` (default: $PTKIT_LIBXDC) into
 * `<dir>/libxdc-harness` (dir created if missing), unless a binary there is newer than
 * both the source and libxdc.a.
 */
export function buildLibxdcHarness(
  dir: string,
  libxdc: string | undefined = process.env[LIBXDC_ENV],
): LibxdcBuild {
  if (!libxdc) return { skip: `${LIBXDC_ENV} is not set ${LIBXDC_HINT}` };
  const lib = join(libxdc, "libxdc.a");
  for (const f of [lib, join(libxdc, "libxdc.h")])
    if (!existsSync(f)) return { skip: `${LIBXDC_ENV}=${libxdc}: ${f} is missing ${LIBXDC_HINT}` };
  const cc = process.env.CC || "cc";
  const version = spawnSync(cc, ["--version"], { encoding: "utf8" });
  if (version.error || version.status !== 0)
    return { skip: `no C compiler (${cc}) on PATH (apt-get install gcc)` };

  mkdirSync(dir, { recursive: true });
  const bin = join(dir, "libxdc-harness");
  const args = (out: string) => [
    ...CFLAGS,
    "-I",
    libxdc,
    "-o",
    out,
    LIBXDC_HARNESS_SOURCE,
    lib,
    "-lcapstone",
  ];
  const command = `${cc} ${args(bin).join(" ")}`;
  const newest = Math.max(statSync(LIBXDC_HARNESS_SOURCE).mtimeMs, statSync(lib).mtimeMs);
  if (existsSync(bin) && statSync(bin).mtimeMs > newest) return { bin, command };

  // Compile to a name of this process's own, then rename (as the libipt harness does).
  const tmp = `${bin}.${process.pid}.tmp`;
  const r = spawnSync(cc, args(tmp), { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    rmSync(tmp, { force: true });
    const msg = (r.stderr || String(r.error ?? `exit status ${r.status}`)).trim();
    const capstone = msg.split("\n").find((l) => /cannot find -lcapstone/.test(l));
    if (capstone)
      return { skip: `capstone does not link: ${capstone.trim()} (apt-get install libcapstone-dev)` };
    return { error: `${command} failed:\n${msg}` };
  }
  renameSync(tmp, bin);
  return { bin, command };
}

/** The harness's JSON line (default mode), as it prints it. */
export interface LibxdcRun {
  decoder: "libxdc";
  bytes: number;
  result: string;
  runs: number;
  best_ns: number;
  runs_ns: number[];
  runs_cpu_ns: number[];
  mb_per_s: number;
  bitmap_nonzero: number;
  bitmap_hash: string;
}

/** The harness's command line: code `maps` (FILE[:FROM-TO]:ADDR), traced `filter` (FROM-TO), `runs` decodes. */
export function libxdcArgv(
  bin: string,
  maps: readonly string[],
  filter: string,
  trace: string,
  runs: number | "edges",
): string[] {
  const mode = runs === "edges" ? ["--edges"] : ["--runs", String(runs)];
  return [bin, ...maps.flatMap((m) => ["--map", m]), "--filter", filter, ...mode, trace];
}

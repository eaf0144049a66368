/**
 * Builds ptkit's libipt harness, `harness.c` beside this file in the source tree: our
 * own C program over Debian libipt-dev's public API, used by the differential test
 * (dump mode), the benchmark (`--bench` mode), the trace-unit end-to-end tests
 * (`--insn` mode, through {@link runInsnDecoder}) and the differential test of
 * instruction lengths (`--ild` mode). Its usage and output formats are
 * specified in the C file's header comment; the callers run it and parse its output.
 *
 * {@link buildLibiptHarness} finds the C compiler ($CC, else cc) and libipt's header,
 * compiles the harness into a directory the caller chooses and reuses the binary there
 * while it is newer than the source. Missing tools are a skip with an install hint; a
 * harness that does not compile for any other reason is an error of ours.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The C source (from dist/tools/libipt/harness.js, three levels below the repository root). */
export const HARNESS_SOURCE = fileURLToPath(new URL("../../../tools/libipt/harness.c", import.meta.url));

/** libipt's public header; its absence means libipt-dev is not installed. */
export const LIBIPT_HEADER = "/usr/include/intel-pt.h";

/** What to install when a skip reason says something is missing. */
export const INSTALL_HINT = "(apt-get install gcc libipt-dev)";
const CFLAGS = ["-O2", "-Wall", "-Wextra"];

export type HarnessBuild =
  /** The compiled harness and the command line that compiled it. */
  | { bin: string; command: string }
  /** No compiler, no libipt-dev (header or library): the caller skips, `skip` says why. */
  | { skip: string }
  /** Our source does not compile: `<command> failed:` and the compiler's messages. */
  | { error: string };

/**
 * Compile the harness into `dir` (created if missing) as `<dir>/<name>`, unless a
 * binary there is newer than the source. The compiler and the header are checked every time, so a missing one is a
 * skip even when an old binary is there.
 */
export function buildLibiptHarness(dir: string, name = "libipt-harness"): HarnessBuild {
  const source = HARNESS_SOURCE;
  const cc = process.env.CC || "cc";
  const version = spawnSync(cc, ["--version"], { encoding: "utf8" });
  if (version.error || version.status !== 0) return { skip: `no C compiler (${cc}) on PATH ${INSTALL_HINT}` };
  if (!existsSync(LIBIPT_HEADER)) {
    return { skip: `libipt-dev is not installed: ${LIBIPT_HEADER} is missing ${INSTALL_HINT}` };
  }

  mkdirSync(dir, { recursive: true });
  const bin = join(dir, name);
  const command = `${cc} ${[...CFLAGS, "-o", bin, source, "-lipt"].join(" ")}`;
  if (existsSync(bin) && statSync(bin).mtimeMs > statSync(source).mtimeMs) return { bin, command };

  // Compile to a name of this process's own, then rename: a concurrent build into the
  // same directory never runs or replaces a half-written binary.
  const tmp = `${bin}.${process.pid}.tmp`;
  const r = spawnSync(cc, [...CFLAGS, "-o", tmp, source, "-lipt"], { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    rmSync(tmp, { force: true });
    const msg = (r.stderr || String(r.error ?? `exit status ${r.status}`)).trim();
    const lipt = msg.split("\n").find((l) => /cannot find -lipt/.test(l));
    if (lipt) return { skip: `libipt does not link: ${lipt.trim()} ${INSTALL_HINT}` };
    return { error: `${command} failed:\n${msg}` };
  }
  renameSync(tmp, bin);
  return { bin, command };
}

/**
 * Run the harness's insn mode: libipt's instruction flow decoder over the trace file
 * `trace` with the image `maps` (`file[:from-to]:address` each), with libipt's errata
 * for `cpu` ("family/model") if given, and the harness's `options` (such as
 * `--skip-event-trace`) before the maps. Returns the output
 * lines (format in harness.c), or the harness's complaint when it exits non-zero.
 */
export function runInsnDecoder(
  bin: string,
  trace: string,
  maps: readonly string[],
  cpu?: string,
  options: readonly string[] = [],
): string[] | { error: string } {
  const args = [
    "--insn",
    ...(cpu ? ["--cpu", cpu] : []),
    ...options,
    ...maps.flatMap((m) => ["--map", m]),
    trace,
  ];
  const r = spawnSync(bin, args, { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error || r.status !== 0)
    return { error: `${bin} ${args.join(" ")}: ${(r.stderr || String(r.error ?? r.status)).trim()}` };
  return r.stdout.split("\n").filter((l) => l !== "");
}

/**
 * `node --import <this module> ...` with $PTKIT_MODULE_LOG set: the file named there
 * lists every module the process loads, ES modules as they load (file: URLs) and, at
 * exit, the CommonJS ones (paths; iced-x86 is loaded with require). Worker threads
 * inherit the --import, so their modules are listed too. Without the variable (e.g.
 * when the test runner runs this file, or a test imports {@link runLogged}) it does
 * nothing.
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire, register } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const log = process.env.PTKIT_MODULE_LOG;
if (log) {
  register("./module-log-hooks.js", import.meta.url);
  const cache = createRequire(import.meta.url).cache;
  process.on("exit", () =>
    appendFileSync(
      log,
      Object.keys(cache)
        .map((path) => `${path}\n`)
        .join(""),
    ),
  );
}

export interface Loaded {
  status: number | null;
  stdout: string;
  stderr: string;
  /** Every module the process loaded: file: URLs (ES modules) and paths (CommonJS). */
  modules: string[];
}

let logDir: string | undefined;

/** Run `node ...argv` in `cwd` (with `env` added) under this module, and record what it loads. */
export function runLogged(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Loaded {
  logDir ??= mkdtempSync(join(tmpdir(), "ptkit-module-log-"));
  const file = join(logDir, "modules.log");
  rmSync(file, { force: true });
  const r = spawnSync(process.execPath, ["--import", fileURLToPath(import.meta.url), ...argv], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, ...env, PTKIT_MODULE_LOG: file },
  });
  const modules = readFileSync(file, "utf8").split("\n").filter(Boolean);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, modules };
}

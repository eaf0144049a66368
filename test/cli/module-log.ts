/**
 * `node --import <this module> ...` with $PTKIT_MODULE_LOG set: the file named there
 * lists every module the process loads, ES modules as they load (file: URLs) and, at
 * exit, the CommonJS ones (paths; iced-x86 is loaded with require). Without the
 * variable (e.g. when the test runner runs this file) it does nothing.
 */
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";

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

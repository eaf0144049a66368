#!/usr/bin/env node
/**
 * The `ptkit` executable as installed (package.json's "bin": dist/cli/ptkit.js, this
 * module bundled): it runs the CLI's bundle, one CommonJS file beside it that the
 * build names in PTKIT_BUNDLE (tools/build/bundle-cli.ts), through V8's code cache of
 * the command and options being run (node/code-cache.ts). The commands with little
 * code, and --help and --version, run from the same modules bundled as ES modules in
 * chunks (PTKIT_ESM), of which they load only theirs: `ptkit stats` on a tiny trace
 * took 5-10 ms longer from the whole bundle, cached (its top level declares every
 * function of every command), where `flow` and `perf` commands ran 1.04-1.12x faster
 * from it (whole processes, build against build).
 */
import { fileURLToPath } from "node:url";
import { cacheKey, loadBundle } from "../node/code-cache.js";

/** The bundles' file names, set by the build (absent: this module was not bundled). */
declare const PTKIT_BUNDLE: string | undefined;
declare const PTKIT_ESM: string | undefined;

/** The commands that run from the ES modules (with no command: --help, --version). */
const LIGHT = new Set(["stats", "dump"]);

interface Entry {
  main(argv: string[]): Promise<number>;
}

const argv = process.argv.slice(2);
try {
  if (typeof PTKIT_BUNDLE !== "string" || typeof PTKIT_ESM !== "string")
    throw new Error("run the built executable, dist/cli/ptkit.js");
  const command = argv[0];
  if (command === undefined || command.startsWith("-") || LIGHT.has(command)) {
    // (It runs the command line when imported, as src/cli/main.js does.)
    await import(PTKIT_ESM);
  } else {
    const file = fileURLToPath(new URL(PTKIT_BUNDLE, import.meta.url));
    const entry = loadBundle(file, cacheKey(argv)).exports as Entry;
    process.exitCode = await entry.main(argv);
  }
} catch (e) {
  // (runCli reports its own errors: this is a bundle that could not be loaded.)
  process.stderr.write(`ptkit: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

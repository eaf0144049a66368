#!/usr/bin/env node
/**
 * The `ptkit` executable as installed (package.json's "bin": dist/cli/ptkit.js, this
 * module bundled). Commands run from CommonJS files beside it that the build names
 * (tools/build/bundle-cli.ts), through V8's code cache of the command and options
 * being run (node/code-cache.ts): 1.04-1.12x faster whole processes than from ES
 * modules, which Node 20 compiles again at every run. The long decodes (`flow`, `perf`,
 * `latency`: bundled-commands.ts) from PTKIT_BUNDLE, which holds only them and
 * initialises all its modules when it loads, so that their top-level bindings stay
 * `const` (tools/build/const-bindings.ts); the other commands from PTKIT_MORE, all of
 * them, each module initialised when first used. `stats`, `dump`, --help and --version,
 * whose code is little, run from the same modules bundled as ES modules in chunks
 * (PTKIT_ESM), of which they load only theirs: `ptkit stats` on a tiny trace took 5-10
 * ms longer from a whole bundle, cached (its top level declares every function).
 */
import { fileURLToPath } from "node:url";
import { cacheKey, loadBundle } from "../node/code-cache.js";
import { BUNDLED_COMMANDS } from "./bundled-commands.js";

/** The bundles' file names, set by the build (absent: this module was not bundled). */
declare const PTKIT_BUNDLE: string | undefined;
declare const PTKIT_MORE: string | undefined;
declare const PTKIT_ESM: string | undefined;

/** The commands that run from the ES modules (with no command: --help, --version). */
const LIGHT = new Set(["stats", "dump"]);

interface Entry {
  main(argv: string[]): Promise<number>;
}

const argv = process.argv.slice(2);
try {
  if (typeof PTKIT_BUNDLE !== "string" || typeof PTKIT_MORE !== "string" || typeof PTKIT_ESM !== "string")
    throw new Error("run the built executable, dist/cli/ptkit.js");
  const command = argv[0];
  if (command === undefined || command.startsWith("-") || LIGHT.has(command)) {
    // (It runs the command line when imported, as src/cli/main.js does.)
    await import(PTKIT_ESM);
  } else {
    const bundle = Object.hasOwn(BUNDLED_COMMANDS, command) ? PTKIT_BUNDLE : PTKIT_MORE;
    const file = fileURLToPath(new URL(bundle, import.meta.url));
    const entry = loadBundle(file, cacheKey(argv)).exports as Entry;
    process.exitCode = await entry.main(argv);
  }
} catch (e) {
  // (runCli reports its own errors: this is a bundle that could not be loaded.)
  process.stderr.write(`ptkit: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

#!/usr/bin/env node
/**
 * The `ptkit` executable as installed (package.json's "bin": dist/cli/ptkit.js, this
 * module bundled): it runs the CLI's bundle, one CommonJS file beside it that the
 * build names in PTKIT_BUNDLE (tools/build/bundle-cli.ts), through V8's code cache of
 * the command and options being run (node/code-cache.ts).
 */
import { fileURLToPath } from "node:url";
import { cacheKey, loadBundle } from "../node/code-cache.js";

/** The bundle's file name, set by the build (absent: this module was not bundled). */
declare const PTKIT_BUNDLE: string | undefined;

interface Entry {
  main(argv: string[]): Promise<number>;
}

const argv = process.argv.slice(2);
try {
  if (typeof PTKIT_BUNDLE !== "string") throw new Error("run the built executable, dist/cli/ptkit.js");
  const file = fileURLToPath(new URL(PTKIT_BUNDLE, import.meta.url));
  const entry = loadBundle(file, cacheKey(argv)).exports as Entry;
  process.exitCode = await entry.main(argv);
} catch (e) {
  // (runCli reports its own errors: this is a bundle that could not be loaded.)
  process.stderr.write(`ptkit: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

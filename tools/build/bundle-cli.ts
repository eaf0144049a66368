/**
 * `npm run build`'s last step: bundles the `ptkit` executable, as tsc compiled it into
 * <outDir>/src/cli/, into <outDir>/cli/ with esbuild, so that a command's process loads
 * a few files instead of dozens of ES modules (Node's module loader was a large part
 * of a small command's time).
 *
 *   node dist/tools/build/bundle-cli.js      # dist/src/cli/main.js -> dist/cli/ptkit.js
 *
 * - ptkit.js is the executable (package.json's "bin"): main.js's `#!/usr/bin/env node`
 *   line is kept and the file made executable (as is dist/src/cli/main.js).
 * - chunk-worker.js is the decoding threads' entry, beside the modules that start them
 *   (node-workers.ts names it relative to itself). It is bundled on its own, into
 *   worker-*.js files: a thread has its own modules anyway, and the command's bundle
 *   then splits into fewer files (esbuild makes a file for each set of entry points that
 *   share code).
 * - The rest is chunks (esbuild's code splitting): what the commands import on demand
 *   (each command, analysis outputs, perf.data, sideband, the demangler's loader) still
 *   loads only when used.
 * - Packages (iced-x86, gecko-profiler-demangle, fzstd) are not bundled: they load from
 *   node_modules at run time, as before (the bundle lives inside the package, so
 *   `createRequire(import.meta.url)` finds them).
 */
import { chmodSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

/** The build's output directory: this file runs from <outDir>/tools/build/. */
const OUT_DIR = fileURLToPath(new URL("../../", import.meta.url));
const CLI_SRC = `${OUT_DIR}src/cli`;
/** Where the bundle goes. */
const BUNDLE_DIR = `${OUT_DIR}cli`;

const COMMON: esbuild.BuildOptions = {
  outdir: BUNDLE_DIR,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  // Whitespace only: the stack of an internal error keeps ptkit's names.
  minifyWhitespace: true,
  logLevel: "silent",
};

/** Write the bundle into {@link BUNDLE_DIR}; resolves to esbuild's warnings, formatted. */
async function bundleCli(): Promise<string[]> {
  rmSync(BUNDLE_DIR, { recursive: true, force: true });
  const results = [
    await esbuild.build({ ...COMMON, entryPoints: { ptkit: `${CLI_SRC}/main.js` } }),
    await esbuild.build({
      ...COMMON,
      entryPoints: { "chunk-worker": `${CLI_SRC}/chunk-worker.js` },
      chunkNames: "worker-[name]-[hash]",
    }),
  ];
  for (const bin of [`${BUNDLE_DIR}/ptkit.js`, `${CLI_SRC}/main.js`]) chmodSync(bin, 0o755);
  return esbuild.formatMessages(
    results.flatMap((r) => r.warnings),
    { kind: "warning" },
  );
}

try {
  for (const w of await bundleCli()) process.stderr.write(w);
} catch (e) {
  process.stderr.write(`bundling the CLI failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

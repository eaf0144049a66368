/**
 * `npm run bundle`: writes the browser bundle of ptkit's library layers (see
 * bundle.ts) to dist/browser/ptkit.js, or to the file given as the argument, and the
 * files to serve beside it (BUNDLE_ASSETS) into the same directory.
 *
 *   node dist/tools/browser/build-bundle.js                 # dist/browser/ptkit.js
 *   node dist/tools/browser/build-bundle.js /tmp/ptkit.js
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { BUNDLE_ASSETS, bundleLibrary, REPO_ROOT } from "./bundle.js";

const outfile = resolve(process.argv[2] ?? join(REPO_ROOT, "dist", "browser", "ptkit.js"));
try {
  const { code, warnings } = await bundleLibrary();
  for (const w of warnings) process.stderr.write(w);
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(outfile, code);
  process.stdout.write(`${outfile}: ${code.length} bytes\n`);
  for (const [name, source] of Object.entries(BUNDLE_ASSETS)) {
    copyFileSync(source, join(dirname(outfile), name));
    process.stdout.write(`${join(dirname(outfile), name)}\n`);
  }
} catch (e) {
  process.stderr.write(`bundle failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

/**
 * Builds the web app (web/: the page, its decoding worker) as static files that work
 * from any web server: index.html, app.js, worker.js (the session layer's perf.data
 * pipeline, iced-x86 included, as the browser bundle builds it), the demangler's
 * WebAssembly module, and speedscope's release build (the timeline viewer) under
 * speedscope/. `npm run build` writes them to dist/web/ (what `ptkit web` serves);
 * `npm run web -- DIR` to DIR.
 *
 *   node dist/tools/web/build-web.js [DIR]
 */
import { copyFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { BUNDLE_ASSETS, bundleLibrary, REPO_ROOT } from "../browser/bundle.js";

const SPEEDSCOPE = join(
  dirname(createRequire(join(REPO_ROOT, "package.json")).resolve("speedscope/package.json")),
  "dist",
  "release",
);

/** Write the web app's files into `dir`; returns the names written. */
export async function buildWeb(dir: string): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const name of ["app", "worker"]) {
    const { code, warnings } = await bundleLibrary({ entry: join(REPO_ROOT, "web", `${name}.ts`) });
    for (const w of warnings) process.stderr.write(w);
    writeFileSync(join(dir, `${name}.js`), code);
    written.push(`${name}.js`);
  }
  writeFileSync(join(dir, "index.html"), readFileSync(join(REPO_ROOT, "web", "index.html")));
  written.push("index.html");
  for (const [name, source] of Object.entries(BUNDLE_ASSETS)) {
    copyFileSync(source, join(dir, name));
    written.push(name);
  }
  cpSync(SPEEDSCOPE, join(dir, "speedscope"), { recursive: true, filter: (f) => !f.endsWith(".map") });
  written.push("speedscope/");
  return written;
}

const isMain =
  process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  const dir = resolve(process.argv[2] ?? join(REPO_ROOT, "dist", "web"));
  try {
    const names = await buildWeb(dir);
    process.stdout.write(`${dir}: ${names.join(", ")}\n`);
  } catch (e) {
    process.stderr.write(`web build failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}

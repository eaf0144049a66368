/**
 * The browser bundle step: it builds, and it refuses Node built-in modules, naming the
 * chain of imports that brought one in (only iced-x86's `fs`/`path`/`util` get
 * browser stand-ins).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { bundleLibrary } from "../../tools/browser/bundle.js";

test("the library layers bundle for the browser, iced-x86's wasm embedded", async () => {
  const { code, warnings } = await bundleLibrary();
  assert.deepEqual(warnings, []);
  // The wasm travels as base64 of its bytes; "AGFzbQ" is the start of "\0asm".
  assert.match(code, /"AGFzbQ/);
  assert.doesNotMatch(code, /__dirname|require\("(fs|path|util)"\)/);
});

test("a Node built-in module fails the bundle, with the modules that imported it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-bundle-"));
  try {
    writeFileSync(join(dir, "entry.js"), 'export { hostname } from "./middle.js";\n');
    writeFileSync(join(dir, "middle.js"), 'export { hostname } from "node:os";\n');
    writeFileSync(
      join(dir, "bare.js"),
      'import { readFileSync } from "fs";\nexport const f = readFileSync;\n',
    );
    await assert.rejects(
      bundleLibrary({ entry: join(dir, "entry.js") }),
      /Node-only module "node:os" in the browser bundle, imported by \S*middle\.js <- \S*entry\.js/,
    );
    // iced-x86 may have its stand-in `fs`; no other module may.
    await assert.rejects(bundleLibrary({ entry: join(dir, "bare.js") }), /Node-only module "fs"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * The CLI bundle (dist/cli, made by tools/build/bundle-cli.ts; this test runs after a
 * build) loads from node_modules only the packages that must stay there: native code
 * or WebAssembly. The small pure-JS ones are bundled into the chunks that use them, as
 * each of a package's files costs Node's loader at every start (@bufbuild/protobuf's
 * wire API alone is 20 files).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "../corpus.js";

const BUNDLE = join(REPO_ROOT, "dist", "cli");
const LEFT_OUT = new Set(["iced-x86", "gecko-profiler-demangle", "@duckdb/node-api"]);

/** The packages a module's text imports (static, side-effect and dynamic imports, require calls). */
function packageImports(code: string): string[] {
  const found: string[] = [];
  const spec =
    /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\(\s*)"((?:@[a-z0-9-]+\/)?[a-z0-9][a-z0-9._-]*)(?:\/[^"]*)?"/g;
  for (const m of code.matchAll(spec)) found.push(m[1]!);
  return found;
}

test("finds the packages in import statements, and nothing in strings that merely contain from", () => {
  assert.deepEqual(
    packageImports(
      'import{a}from"fzstd";import"x/y.js";const m=await import("@duckdb/node-api");s=`{"from":1}`;import{b}from"./c.js";import{d}from"node:fs";var i=require("iced-x86");require("./e.js")',
    ),
    ["fzstd", "x", "@duckdb/node-api", "iced-x86"],
  );
});

test("the bundle imports only the packages left to node_modules", {
  skip: !existsSync(BUNDLE) && "no build",
}, () => {
  const files = readdirSync(BUNDLE).filter((f) => f.endsWith(".js") || f.endsWith(".cjs"));
  assert.ok(files.includes("ptkit.js"), "dist/cli/ptkit.js");
  assert.ok(
    files.some((f) => f.endsWith(".cjs")),
    "the commands' CommonJS bundle",
  );
  const imported = new Set<string>();
  for (const f of files)
    for (const p of packageImports(readFileSync(join(BUNDLE, f), "utf8"))) imported.add(p);
  assert.ok(imported.has("iced-x86"), "iced-x86 stays a package (the check finds imports)");
  assert.deepEqual([...imported].filter((p) => !LEFT_OUT.has(p)).sort(), []);
});

/**
 * tools/build/const-bindings.ts: the bundles' top-level `var`s that nothing assigns to
 * become `const` again, and on-demand imports of ptkit's modules become static. Each
 * rewritten program is also run, to show that it still means what it meant.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runInNewContext } from "node:vm";
import { constTopLevel, eagerImports } from "../../tools/build/const-bindings.js";
import { REPO_ROOT } from "../corpus.js";

/** The kind each top-level statement declaring `name` has after the rewrite. */
function kindOf(text: string, name: string): string | undefined {
  const pattern = `(?:\\{[^}]*\\b${name}\\b[^}]*\\}|\\[[^\\]]*\\b${name}\\b[^\\]]*\\]|${name}\\b)`;
  return new RegExp(`(?:^|[;\\n])\\s*(var|const|let)\\s*${pattern}`).exec(text)?.[1];
}

test("a top-level var nothing assigns to becomes const; the program computes the same", () => {
  const src = "var a=1;var {b,c:d}=({b:2,c:3});var [e,,f]=[4,5,6];function g(){return a+b+d+e+f}g();";
  const r = constTopLevel(src);
  assert.equal(r.changed, 3);
  assert.equal(r.kept, 0);
  for (const name of ["a", "b", "d", "e", "f"]) assert.equal(kindOf(r.text, name), "const", name);
  assert.equal(runInNewContext(r.text), runInNewContext(src));
});

test("a var that anything assigns to stays var, whatever the form of the assignment", () => {
  const cases: [string, string][] = [
    ["x", "var x=1;x=2;"],
    ["x", "var x=1;x+=2;"],
    ["x", "var x=1;x??=2;"],
    ["x", "var x=1;x++;"],
    ["x", "var x=1;--x;"],
    ["x", "var x=1;[x]=[2];"],
    ["x", "var x=1;({x}={x:2});"],
    ["x", "var x=1;({k:x}={k:2});"],
    ["x", "var x=1;[...x]=[2];"],
    ["x", "var x=1;[x=3]=[];"],
    ["x", "var x=1;for(x of [2]);"],
    ["x", "var x=1;for(x in {k:2});"],
    ["x", "var x=1;(x)=2;"],
    // A local of the same name counts too: the rewrite does not resolve scopes.
    ["x", "var x=1;function f(){let x;x=2}"],
    // Declared without a value, assigned later (esbuild's modules initialised on demand).
    ["x", "var x;function init(){}"],
  ];
  for (const [name, src] of cases) {
    const r = constTopLevel(src);
    assert.equal(kindOf(r.text, name), "var", src);
    assert.equal(r.changed, 0, src);
  }
});

test("one assigned name keeps its whole statement var; declarations inside functions are left alone", () => {
  const r = constTopLevel("var a=1,b=2;b=3;function f(){var c=4;return c}var d=5;");
  assert.equal(r.changed, 1);
  assert.equal(r.kept, 1);
  assert.match(r.text, /^var a=1,b=2;b=3;function f\(\)\{var c=4;return c\}const d=5;$/);
});

test("let and const stay as they are; text around the statements is kept byte for byte", () => {
  const src = "#!/usr/bin/env node\n// var x=1 in a comment\nlet a=1;const b='var c=2';\nvar  d = 3 ;";
  const r = constTopLevel(src);
  assert.equal(
    r.text,
    "#!/usr/bin/env node\n// var x=1 in a comment\nlet a=1;const b='var c=2';\nconst  d = 3 ;",
  );
});

test("on-demand imports of relative modules become static imports; packages and computed specifiers stay", async () => {
  const src =
    'export async function f(){const a=await import("./a.js");const b=await import("./a.js");' +
    'const p=await import("pkg");const q=await import(name);return (await import("../b.js")).x}';
  const out = eagerImports(src)!;
  assert.match(
    out,
    /^import \* as __ptkitEager0 from "\.\/a\.js";\nimport \* as __ptkitEager1 from "\.\.\/b\.js";\n/,
  );
  assert.equal(out.match(/Promise\.resolve\(__ptkitEager0\)/g)?.length, 2);
  assert.match(out, /Promise\.resolve\(__ptkitEager1\)\)\.x/);
  assert.match(out, /await import\("pkg"\)/);
  assert.match(out, /await import\(name\)/);
  assert.equal(eagerImports('import {a} from "./a.js"; export const b = a;'), undefined);
});

test("with a list, the relative imports not in it become rejected promises", async () => {
  const out = eagerImports(
    'const t={a:()=>import("./a.js"),b:()=>import("./b.js")};',
    "t.js",
    new Set(["./a.js"]),
  )!;
  assert.match(out, /^import \* as __ptkitEager0 from "\.\/a\.js";\n/);
  assert.doesNotMatch(out, /from "\.\/b\.js"/);
  const b = /b:\(\)=>(Promise\.reject\(new Error\("[^"]*"\)\))/.exec(out)?.[1];
  assert.ok(b !== undefined, out);
  await assert.rejects(
    runInNewContext(b, { Promise, Error }) as Promise<unknown>,
    /\.\/b\.js is not in this bundle/,
  );
});

test("the built bundles: the commands' one file initialises every module at load, its top level const", {
  skip: !existsSync(join(REPO_ROOT, "dist", "cli")) && "no build",
}, () => {
  const dir = join(REPO_ROOT, "dist", "cli");
  const main = readdirSync(dir).find((f) => /^ptkit-main-[\da-f]{16}\.cjs$/.test(f));
  assert.ok(main !== undefined, "the commands' CommonJS bundle");
  const text = readFileSync(join(dir, main), "utf8");
  // esbuild's wrapper of a module initialised on demand (its bindings assigned in it: var).
  assert.doesNotMatch(text, /__esm\(/);
  // What a rewrite of the built file still finds to change: nothing (the build did it).
  assert.equal(constTopLevel(text).changed, 0);
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".js")))
    assert.equal(constTopLevel(readFileSync(join(dir, f), "utf8"), f).changed, 0, f);
});

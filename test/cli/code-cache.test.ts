/**
 * The executable's code cache (src/node/code-cache.ts): a bundle compiled with the
 * bytecode an earlier run left, written where there was none, and bytes that are not
 * a whole cache of this bundle never given to V8 (it does not check them itself: a
 * flipped byte can crash the process). Each load runs in a child process, as the
 * cache is written when a process exits.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { cacheKey } from "../../src/node/code-cache.js";
import { REPO_ROOT } from "../corpus.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const CODE_CACHE = pathToFileURL(join(HERE, "..", "..", "src", "node", "code-cache.js")).href;
const BIN = join(HERE, "..", "..", "cli", "ptkit.js");

/** A CommonJS "bundle" with enough functions that its cache is not empty. */
function bundleText(answer: number): string {
  const fns = Array.from({ length: 40 }, (_, i) => `function f${i}(x) { return x * ${i + 1} + ${answer}; }`);
  return `${fns.join("\n")}
exports.answer = () => f0(0) + [${fns.map((_, i) => `f${i}`).join(",")}].reduce((s, f) => s + f(1), 0) * 0;
exports.file = __filename;
`;
}

/** Load `file` with key `key` in a child process: the cache's state and the bundle's answer. */
function load(file: string, key: string, env: NodeJS.ProcessEnv): { state: string; answer: number } {
  const script = `import { loadBundle } from ${JSON.stringify(CODE_CACHE)};
const b = loadBundle(${JSON.stringify(file)}, ${JSON.stringify(key)});
console.log(JSON.stringify({ state: b.state, answer: b.exports.answer(), file: b.exports.file }));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, "");
  const { state, answer, file: loaded } = JSON.parse(r.stdout);
  assert.equal(loaded, file);
  return { state, answer };
}

test("a cache per command and set of option names, whatever their values", () => {
  assert.equal(cacheKey(["stats", "a.pt"]), "stats");
  assert.equal(cacheKey([]), "other");
  assert.equal(cacheKey(["--help"]), "other");
  assert.equal(cacheKey(["Flow", "x"]), "other");
  const afl = cacheKey(["flow", "--quiet", "--elf", "a:0x400000", "--pt", "t.pt", "--afl-map", "m.bin"]);
  assert.match(afl, /^flow-[\da-f]{8}$/);
  // The same names in another order, with other values and files.
  assert.equal(cacheKey(["flow", "--pt", "u.pt", "--afl-map=n.bin", "--elf", "b", "--quiet"]), afl);
  assert.notEqual(cacheKey(["flow", "--quiet", "--elf", "a", "--pt", "t.pt"]), afl);
  assert.notEqual(
    cacheKey(["flow", "--block-decoder", "--elf", "a", "--pt", "t.pt"]),
    cacheKey(["flow", "--elf", "a", "--pt", "t.pt"]),
  );
});

describe("the code cache", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-code-cache-"));
  const file = join(dir, "bundle.cjs");
  const caches = join(dir, "caches");
  const env = { PTKIT_CODE_CACHE: caches };
  const files = () => readdirSync(caches).filter((f) => f.endsWith(".v8"));

  test("written by the first run, used by the next, one file per command", () => {
    writeFileSync(file, bundleText(42));
    assert.deepEqual(load(file, "stats", env), { state: "miss", answer: 42 });
    assert.equal(files().length, 1);
    assert.match(files()[0]!, /^bundle\.cjs\.\d+-\d+\.stats\.v[\d.]+-\w+\.v8$/);
    assert.equal(load(file, "stats", env).state, "hit");
    // Another command: a cache of its own.
    assert.equal(load(file, "flow", env).state, "miss");
    assert.equal(load(file, "flow", env).state, "hit");
    assert.equal(files().length, 2);
  });

  test("a damaged or cut file is a miss (never given to V8) and is written again", () => {
    const path = join(caches, files().find((f) => f.includes(".stats."))!);
    const whole = readFileSync(path);
    for (const at of [whole.length - 1, whole.length >> 1, 60, 20, 3]) {
      const bad = Buffer.from(whole);
      bad[at]! ^= 0x55;
      writeFileSync(path, bad);
      assert.equal(load(file, "stats", env).state, "miss", `byte ${at}`);
      assert.equal(load(file, "stats", env).state, "hit", `byte ${at}, written again`);
    }
    writeFileSync(path, whole.subarray(0, whole.length >> 1));
    assert.equal(load(file, "stats", env).state, "miss");
    writeFileSync(path, "");
    assert.equal(load(file, "stats", env).state, "miss");
    assert.equal(load(file, "stats", env).state, "hit");
  });

  test("a rebuilt bundle never meets the old one's bytecode, whose files go; another bundle's stay", () => {
    // Caches of the same bundle built with other content (its name carries the hash
    // of its content), and of another bundle.
    const tail = `.1-2.stats.${process.version}-${process.arch}.v8`;
    const stale = `bundle-0123456789abcdef.cjs${tail}`;
    const other = `other-0123456789abcdef.cjs${tail}`;
    for (const f of [stale, other]) writeFileSync(join(caches, f), "x");
    // The same length, other code: V8 would take the old cache for it.
    writeFileSync(file, bundleText(43));
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later);
    const r = load(file, "stats", env);
    assert.equal(r.state, "miss");
    assert.equal(r.answer, 43);
    const left = files();
    assert.equal(left.filter((f) => f.startsWith("bundle")).length, 1, left.join(" "));
    assert.ok(left.includes(other), left.join(" "));
    assert.ok(!left.includes(stale), left.join(" "));
    assert.equal(load(file, "stats", env).answer, 43);
    unlinkSync(join(caches, other));
  });

  test("a folder keeps the newest 48 files", () => {
    const real = files()[0]!;
    const prefix = real.slice(0, real.indexOf(".stats."));
    const old = new Date(Date.now() - 3_600_000);
    for (let i = 0; i < 60; i++) {
      const path = join(caches, `${prefix}.k${i}.${process.version}-${process.arch}.v8`);
      writeFileSync(path, "x");
      utimesSync(path, old, old);
    }
    assert.equal(load(file, "fresh", env).state, "miss");
    const left = files();
    assert.equal(left.length, 48);
    assert.ok(
      left.some((f) => f.includes(".fresh.")),
      "the file just written stays",
    );
  });

  test("off: nothing read or written", () => {
    const none = join(dir, "none");
    assert.equal(load(file, "stats", { PTKIT_CODE_CACHE: "off" }).state, "off");
    assert.equal(load(file, "stats", { PTKIT_CODE_CACHE: "" }).state, "off");
    assert.throws(() => readdirSync(none));
  });

  test("an unwritable cache folder is a miss each time, and the command still runs", () => {
    const blocked = join(dir, "blocked");
    writeFileSync(blocked, "a file where the folder would be");
    const env2 = { PTKIT_CODE_CACHE: join(blocked, "sub") };
    assert.equal(load(file, "stats", env2).state, "miss");
    assert.equal(load(file, "stats", env2).state, "miss");
  });

  test("the executable: the same output from a first run and from its cache; stats and dump run without", () => {
    const args = ["flow", "--elf", "sample.elf", "--pt", "sample.pt:0-0x400"];
    const cache = join(dir, "cli");
    const run = (argv: string[]) =>
      spawnSync(process.execPath, [BIN, ...argv], {
        cwd: join(REPO_ROOT, "sample"),
        encoding: "utf8",
        env: { ...process.env, PTKIT_CODE_CACHE: cache },
      });
    const first = run(args);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /^00000000004000e8 {2}xor ebp, ebp$/m);
    assert.deepEqual(
      readdirSync(cache).map((f) => f.replace(/^ptkit-main-[\da-f]{16}\.cjs\.\d+-\d+\./, "")),
      [`${cacheKey(args)}.${process.version}-${process.arch}.v8`],
    );
    const second = run(args);
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stdout, first.stdout);
    // The commands with little code run from the ES modules (src/cli/launch.ts).
    assert.equal(run(["stats", "sample.pt"]).status, 0);
    assert.equal(run(["dump", "sample.pt"]).status, 0);
    assert.equal(readdirSync(cache).length, 1);
  });
});

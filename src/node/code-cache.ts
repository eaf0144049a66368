/**
 * The CLI's bundle run through V8's code cache. Node 20 keeps no compiled code for ES
 * modules between runs, and compiling ptkit's code again was tens of milliseconds of
 * every command (with this, build against build in alternation: the gzip trace's
 * count 1.06-1.10x, `perf -q --timeline` 1.12x): so the build makes the CLI one CommonJS file
 * (tools/build/bundle-cli.ts), and {@link loadBundle} compiles it as a `vm.Script`
 * with the bytecode an earlier run of the same command left, and where there was
 * none (or V8 refused it: another Node, other flags) writes at exit what this run
 * compiled, for the next. One file per command and set of option names
 * ({@link cacheKey}): each compiles other functions (the block decoder, the AFL map).
 *
 * Like Python's `__pycache__`, the files go beside the bundle (`code-cache/`), else,
 * where that folder cannot be written (a system-wide install), into the user's cache
 * folder (`~/.cache/ptkit/code-cache`); `PTKIT_CODE_CACHE` names another folder, or
 * `off`. A file's name carries the bundle's name, size and time of writing, and Node's
 * version and architecture, so a rebuilt bundle never meets bytecode of another.
 * V8 checks a cache's version and flags but not its bytes (in a release build a
 * flipped byte can crash the process), so each file carries a SHA-256 of its data,
 * checked before V8 sees it. Files are written under a temporary name and renamed.
 * Nothing here fails a command: a cache that cannot be read or written is a miss.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { constants, Script } from "node:vm";
import { userCacheDir } from "./cache-dir.js";

/** Cache files a folder keeps at most (the oldest go): a command's option sets each have one. */
const MAX_FILES = 48;
/** A cache file's first bytes; the SHA-256 of the rest follows, then V8's data. */
const MAGIC = Buffer.from("ptkit-v8-code-1\n");
const DIGEST = 32;

/** What became of the cache when a bundle was loaded (tests look). */
export type CodeCacheState = "off" | "hit" | "miss" | "rejected";

export interface LoadedBundle {
  /** The bundle's `module.exports`. */
  exports: unknown;
  state: CodeCacheState;
}

/**
 * The cache key of the command line `argv`: the command and, when options are given,
 * a hash of their names (not their values: `--jobs 2` and `--jobs 4` run the same code).
 */
export function cacheKey(argv: readonly string[]): string {
  const command = argv[0] !== undefined && /^[a-z][a-z-]{0,20}$/.test(argv[0]) ? argv[0] : "other";
  const names = [
    ...new Set(argv.slice(1).flatMap((a) => (a.startsWith("-") ? [a.split("=")[0]!] : []))),
  ].sort();
  if (names.length === 0) return command;
  // FNV-1a over the names.
  let h = 0x811c9dc5;
  for (const c of names.join(" ")) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
  return `${command}-${(h >>> 0).toString(16).padStart(8, "0")}`;
}

/**
 * Run the CommonJS file `file` as `require` would, compiled with the code cache of
 * `key` ({@link cacheKey}); at exit, unless that was a hit, the cache is written.
 */
export function loadBundle(file: string, key: string, env: NodeJS.ProcessEnv = process.env): LoadedBundle {
  // ASCII (the build checks): read as Latin-1, which costs no UTF-8 decoding (1 MB).
  const source = readFileSync(file, "latin1");
  const dirs = cacheDirs(file, env);
  const stamped = `${basename(file)}.${bundleStamp(file)}.`;
  const name = `${stamped}${/^[a-z][a-z0-9-]{0,31}$/.test(key) ? key : "other"}.${process.version}-${process.arch}.v8`;
  let data: Buffer | undefined;
  for (const dir of dirs) {
    data = readCache(join(dir, name));
    if (data !== undefined) break;
  }
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    cachedData: data,
    // An import() in the bundle goes to Node's loader (experimental in Node 20, and it
    // says so on stderr: the CLI requires its packages instead).
    importModuleDynamically: (
      constants as unknown as { USE_MAIN_CONTEXT_DEFAULT_LOADER?: unknown } | undefined
    )?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  } as ConstructorParameters<typeof Script>[1]);
  const state: CodeCacheState =
    dirs.length === 0 ? "off" : data === undefined ? "miss" : script.cachedDataRejected ? "rejected" : "hit";
  // Written at exit: the functions this run compiled are in it then, not only the top level.
  if (state === "miss" || state === "rejected")
    process.once("exit", () => writeCache(dirs, stamped, name, script));
  const module = { exports: {} as unknown };
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return { exports: module.exports, state };
}

/** Where caches are looked for and written, in order (none: off). */
function cacheDirs(file: string, env: NodeJS.ProcessEnv): string[] {
  const named = env.PTKIT_CODE_CACHE;
  if (named !== undefined) return named === "" || named === "off" ? [] : [named];
  const dirs = [join(dirname(file), "code-cache")];
  const user = userCacheDir(env);
  if (user !== "") dirs.push(join(user, "code-cache"));
  return dirs;
}

/** The bundle file's size and time of writing (to the millisecond). */
function bundleStamp(file: string): string {
  try {
    const st = statSync(file);
    return `${st.size}-${Math.floor(st.mtimeMs)}`;
  } catch {
    return "0-0";
  }
}

/** A cache file's bytes: {@link MAGIC}, the SHA-256 of V8's data, the data. */
function cacheBytes(script: Script): Buffer {
  const data = script.createCachedData();
  return Buffer.concat([MAGIC, createHash("sha256").update(data).digest(), data]);
}

/** V8's data from the file at `path`, when it is whole (else undefined). */
function readCache(path: string): Buffer | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return undefined;
  }
  const head = MAGIC.length + DIGEST;
  if (bytes.length <= head || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const data = bytes.subarray(head);
  const digest = createHash("sha256").update(data).digest();
  return digest.equals(bytes.subarray(MAGIC.length, head)) ? data : undefined;
}

/**
 * The bundle a cache file's name (or a bundle's) is of, whatever its build: the name
 * before its first dot, less the hash of its content (`ptkit-main-<16 hex>` is
 * `ptkit-main`).
 */
function bundleFamily(name: string): string {
  const dot = name.indexOf(".");
  return (dot < 0 ? name : name.slice(0, dot)).replace(/-[\da-f]{16}$/, "");
}

/**
 * Write the script's cache as `name` into the first folder that takes it; the caches
 * there of other builds of the same bundle (names not starting with `stamped`) go.
 */
function writeCache(dirs: readonly string[], stamped: string, name: string, script: Script): void {
  let bytes: Buffer | undefined;
  for (const dir of dirs) {
    const tmp = join(dir, `${name}.${process.pid}.tmp`);
    try {
      mkdirSync(dir, { recursive: true });
      const fd = openSync(tmp, "w");
      try {
        // Made once a folder takes files (V8 takes ~6 ms to serialise the bytecode).
        bytes ??= cacheBytes(script);
        writeFileSync(fd, bytes);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, join(dir, name));
    } catch {
      try {
        unlinkSync(tmp);
      } catch {}
      continue;
    }
    // Caches of a bundle rebuilt or replaced since are of no more use (another
    // bundle's, of another name, stay: the executable runs two), and past MAX_FILES
    // the oldest go.
    try {
      const kept: { path: string; time: number }[] = [];
      const ours = bundleFamily(stamped);
      for (const f of readdirSync(dir)) {
        if (!f.endsWith(".v8")) continue;
        const path = join(dir, f);
        if (f.startsWith(stamped)) kept.push({ path, time: statSync(path).mtimeMs });
        else if (bundleFamily(f) === ours) unlinkSync(path);
      }
      kept.sort((a, b) => a.time - b.time);
      for (const f of kept.slice(0, Math.max(0, kept.length - MAX_FILES))) unlinkSync(f.path);
    } catch {}
    return;
  }
}

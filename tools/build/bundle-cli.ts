/**
 * `npm run build`'s last step: bundles the `ptkit` executable, as tsc compiled it into
 * <outDir>/src/cli/, into <outDir>/cli/ with esbuild, so that a command's process loads
 * a few files instead of dozens of ES modules (Node's module loader was a large part
 * of a small command's time), and compiles little of ptkit's code again.
 *
 *   node dist/tools/build/bundle-cli.js      # dist/src/cli/* -> dist/cli/
 *
 * - ptkit.js is the executable (package.json's "bin"), src/cli/launch.ts bundled (its
 *   `#!/usr/bin/env node` line kept, the file made executable, as is
 *   dist/src/cli/main.js). It names the bundles below, which it runs.
 * - ptkit-main-<hash>.cjs: the long decodes (src/cli/entry.ts and all it imports, of
 *   the commands only those in src/cli/bundled-commands.ts) as one CommonJS file, ASCII
 *   only, named by a hash of its content, which the executable compiles through V8's
 *   code cache (src/node/code-cache.ts). Its on-demand imports are made static and all
 *   its modules initialised when it loads, so that its top-level bindings can be
 *   `const` again (const-bindings.ts: esbuild makes them `var`).
 * - ptkit-more-<hash>.cjs: all the commands the same way, each module initialised when
 *   first used (esbuild's lazy initialisers, as `import()` asks): for the commands
 *   neither in ptkit-main nor light (launch.ts), which the whole code's initialisation
 *   would cost start-up.
 * - ptkit-esm.js and its chunks: all commands as ES modules (src/cli/main.ts), with
 *   esbuild's code splitting, for the commands with little code (see launch.ts):
 *   what the commands import on demand (each command, analysis outputs,
 *   perf.data, sideband, the demangler's loader) loads only when used. Each such build
 *   runs twice: once for esbuild's module graph, from which chunk-plan.ts plans fewer
 *   files (esbuild alone makes many of a few hundred bytes), then for the files. Their
 *   top-level `var`s that nothing assigns to are `const` again too.
 * - chunk-worker.js is the decoding threads' entry, beside the modules that start them
 *   (cli/ptkit.ts names it relative to itself). It is bundled on its own, into
 *   worker-*.js files: a thread has its own modules anyway, and the command's bundle
 *   then splits into fewer files (esbuild makes a file for each set of entry points that
 *   share code).
 * - Packages with native code or WebAssembly (iced-x86, gecko-profiler-demangle,
 *   @duckdb/node-api) are not bundled: they load from node_modules at run time (the
 *   bundle lives inside the package, so `createRequire(import.meta.url)` finds them).
 *   The small pure-JS ones (fzstd, @bufbuild/protobuf's wire API) are bundled.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { BUNDLED_COMMANDS } from "../../src/cli/bundled-commands.js";
import { type PlanModule, planChunks } from "./chunk-plan.js";
import { constTopLevel, eagerImports } from "./const-bindings.js";

/** The build's output directory: this file runs from <outDir>/tools/build/. */
const OUT_DIR = fileURLToPath(new URL("../../", import.meta.url));
/** Where the bundle goes. */
const BUNDLE_DIR = resolve(OUT_DIR, "cli");
/**
 * One more file costs Node's loader about what this much more code costs to load
 * (resolving, reading, compiling and linking a module: measured on the CLI's chunks).
 */
const BYTES_PER_FILE = 24 << 10;
/** Only chunks up to this size are merged into others (see chunk-plan.ts). */
const MAX_MERGED = 2 << 10;

/** The packages left to node_modules: native code, WebAssembly, or large and loaded lazily. */
const EXTERNAL = ["iced-x86", "gecko-profiler-demangle", "@duckdb/node-api"].flatMap((p) => [p, `${p}/*`]);

const COMMON: esbuild.BuildOptions = {
  absWorkingDir: OUT_DIR,
  outdir: BUNDLE_DIR,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Packages load from node_modules at run time, but for the two small pure-JS ones,
  // which go into the chunks that use them: a package's files each cost the loader
  // (@bufbuild/protobuf's wire API is 20 files and took ~40 ms of every command).
  external: EXTERNAL,
  // Whitespace only: the stack of an internal error keeps ptkit's names.
  minifyWhitespace: true,
  logLevel: "silent",
};

/** esbuild's module graph, for chunk-plan.ts: sizes are of the code in the output. */
function moduleGraph(meta: esbuild.Metafile): Map<string, PlanModule> {
  const bytes = new Map<string, number>();
  for (const output of Object.values(meta.outputs))
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs))
      bytes.set(path, (bytes.get(path) ?? 0) + bytesInOutput);
  const graph = new Map<string, PlanModule>();
  for (const [path, input] of Object.entries(meta.inputs)) {
    const own = input.imports.filter((i) => !i.external);
    graph.set(path, {
      bytes: bytes.get(path) ?? input.bytes,
      imports: own.filter((i) => i.kind === "import-statement").map((i) => i.path),
      dynamic: own.filter((i) => i.kind === "dynamic-import").map((i) => i.path),
      importsPackage: input.imports.some(
        (i) => i.external && i.kind === "import-statement" && !i.path.startsWith("node:"),
      ),
    });
  }
  return graph;
}

/** Appends the planned imports to the lazy entries (paths relative to OUT_DIR). */
function appendImports(additions: ReadonlyMap<string, readonly string[]>): esbuild.Plugin {
  const byFile = new Map([...additions].map(([entry, added]) => [resolve(OUT_DIR, entry), added]));
  return {
    name: "ptkit-chunk-plan",
    setup(build) {
      build.onLoad({ filter: /\.js$/ }, (args) => {
        const added = byFile.get(args.path);
        if (added === undefined) return undefined;
        const specifier = (m: string) => `./${relative(dirname(args.path), resolve(OUT_DIR, m))}`;
        const imports = added.map((m) => `import ${JSON.stringify(specifier(m).replaceAll("\\", "/"))};`);
        return { contents: `${readFileSync(args.path, "utf8")}\n${imports.join("\n")}\n`, loader: "js" };
      });
    },
  };
}

/** The command table, whose commands the CommonJS bundle holds only some of. */
const COMMAND_TABLE = resolve(OUT_DIR, "src/cli/ptkit.js");

/**
 * Every on-demand import of ptkit's modules made static (see const-bindings.ts), but
 * in the command table, where the commands not in BUNDLED_COMMANDS are left out.
 */
const EAGER_IMPORTS: esbuild.Plugin = {
  name: "ptkit-eager-imports",
  setup(build) {
    const bundled = new Set(Object.values(BUNDLED_COMMANDS));
    build.onLoad({ filter: /\.js$/ }, (args) => {
      if (relative(OUT_DIR, args.path).startsWith("..")) return undefined;
      const only = resolve(args.path) === COMMAND_TABLE ? bundled : undefined;
      const contents = eagerImports(readFileSync(args.path, "utf8"), args.path, only);
      return contents === undefined ? undefined : { contents, loader: "js" };
    });
  },
};

/** Build `name` from the tsc output `entry` (relative to OUT_DIR) with planned chunks. */
async function bundle(
  name: string,
  entry: string,
  options: esbuild.BuildOptions,
): Promise<esbuild.Message[]> {
  const build = { ...COMMON, ...options, entryPoints: { [name]: `./${entry}` } };
  // First esbuild's module graph (metafile paths are relative to OUT_DIR, as `entry` is).
  const probe = await esbuild.build({ ...build, write: false, metafile: true });
  const plan = planChunks(moduleGraph(probe.metafile), entry, BYTES_PER_FILE, MAX_MERGED);
  return (await esbuild.build({ ...build, plugins: [appendImports(plan.additions)] })).warnings;
}

/**
 * The commands as a CommonJS file (src/cli/entry.js and all it imports), which the
 * executable runs through V8's code cache (src/node/code-cache.ts: Node 20 has none
 * for ES modules), named `<name>-<hash of its content>.cjs`. `eager`: only the commands
 * of BUNDLED_COMMANDS, every module initialised when the file loads (EAGER_IMPORTS);
 * else every command, each module initialised when first used.
 */
async function bundleCommands(
  name: string,
  eager: boolean,
): Promise<{ name: string; warnings: esbuild.Message[] }> {
  const built = await esbuild.build({
    ...COMMON,
    splitting: false,
    format: "cjs",
    // ASCII only, so that the launcher reads it as Latin-1 (no UTF-8 decoding of 1 MB).
    charset: "ascii",
    write: false,
    entryPoints: { [name]: "./src/cli/entry.js" },
    plugins: eager ? [EAGER_IMPORTS] : [],
    // import.meta.url as in the ES modules: the bundle's own file (in dist/cli, as the
    // chunks were), for the files the CLI finds beside itself and createRequire.
    banner: { js: 'var __importMetaUrl = require("node:url").pathToFileURL(__filename).href;' },
    define: { "import.meta.url": "__importMetaUrl" },
  });
  const text = built.outputFiles[0]!.text;
  const wrapped = text.match(/__esm\(\{"([^"]+)"/);
  if (eager && wrapped !== null)
    throw new Error(`${name} initialises ${wrapped[1]} on demand: its bindings would stay var`);
  const contents = Buffer.from(constTopLevel(text, `${name}.cjs`).text, "utf8");
  const wide = contents.findIndex((b) => b > 0x7f);
  if (wide >= 0)
    throw new Error(
      `${name} has a byte above 0x7f at ${wide} (esbuild leaves them in regular expressions): write it as an escape`,
    );
  const file = `${name}-${createHash("sha256").update(contents).digest("hex").slice(0, 16)}.cjs`;
  mkdirSync(BUNDLE_DIR, { recursive: true });
  writeFileSync(resolve(BUNDLE_DIR, file), contents);
  return { name: file, warnings: built.warnings };
}

/** Write the bundle into {@link BUNDLE_DIR}; resolves to esbuild's warnings, formatted. */
async function bundleCli(): Promise<string[]> {
  rmSync(BUNDLE_DIR, { recursive: true, force: true });
  const main = await bundleCommands("ptkit-main", true);
  const more = await bundleCommands("ptkit-more", false);
  // The executable: the launcher, which names the commands' bundles and the ES modules'.
  const launcher = await esbuild.build({
    ...COMMON,
    splitting: false,
    entryPoints: { ptkit: "./src/cli/launch.js" },
    define: {
      PTKIT_BUNDLE: JSON.stringify(`./${main.name}`),
      PTKIT_MORE: JSON.stringify(`./${more.name}`),
      PTKIT_ESM: JSON.stringify("./ptkit-esm.js"),
    },
  });
  const warnings = [
    ...main.warnings,
    ...more.warnings,
    ...launcher.warnings,
    // The commands whose code is little (stats, dump) as ES modules in chunks: they load
    // less than the whole bundle (see launch.ts).
    ...(await bundle("ptkit-esm", "src/cli/main.js", {})),
    ...(await bundle("chunk-worker", "src/cli/chunk-worker.js", { chunkNames: "worker-[name]-[hash]" })),
  ];
  // (The commands' CommonJS files had their `const`s back before they were named by their hash.)
  for (const name of readdirSync(BUNDLE_DIR).filter((f) => f.endsWith(".js"))) {
    const path = resolve(BUNDLE_DIR, name);
    writeFileSync(path, constTopLevel(readFileSync(path, "utf8"), name).text);
  }
  for (const bin of [resolve(BUNDLE_DIR, "ptkit.js"), resolve(OUT_DIR, "src/cli/main.js")])
    chmodSync(bin, 0o755);
  return esbuild.formatMessages(warnings, { kind: "warning" });
}

try {
  for (const w of await bundleCli()) process.stderr.write(w);
} catch (e) {
  process.stderr.write(`bundling the CLI failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

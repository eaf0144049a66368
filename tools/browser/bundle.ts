/**
 * Bundles ptkit's library layers (the entry `ptkit.ts` beside this file's source) into
 * one ES module for browsers, with esbuild.
 *
 * The layers themselves use no Node API, but iced-x86's npm package is wasm-bindgen's
 * Node target: CommonJS that, when loaded, takes TextDecoder/TextEncoder from
 * `require("util")` and reads `iced_x86_bg.wasm` with `require("fs").readFileSync(
 * require("path").join(__dirname, ...))`. Rather than fork it, the bundle gives that
 * one file browser stand-ins: `util` is the global TextDecoder/TextEncoder, `path.join`
 * joins with "/", `__dirname` is a constant and `fs.readFileSync` returns the wasm
 * bytes, embedded in the bundle by esbuild's binary loader (the module then compiles
 * them with `new WebAssembly.Module`, synchronously, as on Node).
 *
 * The demangler's WebAssembly module is not embedded: see {@link BUNDLE_ASSETS}.
 *
 * Any other import of a Node built-in module fails the bundle, naming the chain of
 * modules that brought it in: the library layers must run in a browser.
 */
import { readFileSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

/** The repository root (this file runs from <outDir>/tools/browser/). */
export const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** The bundle's entry: every library layer, by name. */
export const BUNDLE_ENTRY = join(REPO_ROOT, "tools", "browser", "ptkit.ts");

const require = createRequire(join(REPO_ROOT, "package.json"));
/** iced-x86's CommonJS module, the one file that gets the Node stand-ins. */
const ICED_JS = require.resolve("iced-x86");
const ICED_WASM = join(dirname(ICED_JS), "iced_x86_bg.wasm");

/**
 * Files to serve beside the bundle, by name: gecko-profiler-demangle's WebAssembly
 * module, which the analysis layer's `Demangler.instantiate` takes as bytes (fetched,
 * so that pages that do not demangle do not download it).
 */
export const BUNDLE_ASSETS: Readonly<Record<string, string>> = {
  "gecko-profiler-demangle.wasm": require.resolve("gecko-profiler-demangle/index_bg.wasm"),
};

/** Browser stand-ins for the Node modules iced-x86 loads, as ES module source. */
const ICED_SHIMS: Record<string, string> = {
  fs: `import wasm from ${JSON.stringify(ICED_WASM)};
export function readFileSync(file) {
  if (!String(file).endsWith("iced_x86_bg.wasm")) throw new Error("no file system in the browser: " + file);
  return wasm;
}`,
  path: `export function join(...parts) { return parts.join("/"); }`,
  util: `export const TextDecoder = globalThis.TextDecoder;
export const TextEncoder = globalThis.TextEncoder;`,
};

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
/** `node:anything` and every bare built-in name (`fs`, `fs/promises`, `util`, ...). */
const NODE_BUILTIN = new RegExp(`^(node:.*|${builtinModules.map(escapeRegExp).join("|")})$`);

const SHIM_NS = "ptkit-browser-shim";
/** Marks the resolves the import-chain recorder makes itself. */
const INNER = Symbol("inner");

/** Fails on Node built-ins (except iced-x86's, which get stand-ins) and names who imported them. */
function browserOnly(): esbuild.Plugin {
  return {
    name: "ptkit-browser-only",
    setup(build) {
      // Resolved path -> the module that first imported it, for the chain in errors.
      const importers = new Map<string, string>();
      const chain = (file: string): string => {
        const names: string[] = [];
        for (let f: string | undefined = file; f && names.length < 64; f = importers.get(f)) {
          names.push(relative(REPO_ROOT, f));
        }
        return names.join(" <- ");
      };

      build.onResolve({ filter: NODE_BUILTIN }, (args) => {
        if (args.importer === ICED_JS && args.path in ICED_SHIMS)
          return { path: args.path, namespace: SHIM_NS };
        return {
          errors: [
            {
              text: `Node-only module "${args.path}" in the browser bundle, imported by ${chain(args.importer)}`,
            },
          ],
        };
      });
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === INNER || args.kind === "entry-point") return undefined;
        const r = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          namespace: args.namespace,
          resolveDir: args.resolveDir,
          pluginData: INNER,
        });
        if (r.errors.length > 0) return { errors: r.errors, warnings: r.warnings };
        if (!importers.has(r.path)) importers.set(r.path, args.importer);
        return {
          path: r.path,
          namespace: r.namespace,
          external: r.external,
          sideEffects: r.sideEffects,
          suffix: r.suffix,
          pluginData: r.pluginData,
          warnings: r.warnings,
        };
      });

      build.onLoad({ filter: /.*/, namespace: SHIM_NS }, (args) => ({
        contents: ICED_SHIMS[args.path]!,
        loader: "js",
        resolveDir: REPO_ROOT,
      }));
      // iced reads `__dirname`, which browsers do not have; give its module a local one.
      build.onLoad({ filter: /iced_x86\.js$/ }, (args) => {
        if (args.path !== ICED_JS) return undefined;
        return { contents: `var __dirname = "iced-x86";\n${readFileSync(args.path, "utf8")}`, loader: "js" };
      });
    },
  };
}

export interface BundleOptions {
  /** Entry module (default {@link BUNDLE_ENTRY}). */
  entry?: string;
  /** Minify (default true). */
  minify?: boolean;
}

export interface BundleResult {
  /** The ES module. */
  code: string;
  /** esbuild's warnings, formatted. */
  warnings: string[];
}

/** Build the browser bundle in memory. Throws esbuild's error (with the import chain) on failure. */
export async function bundleLibrary(options: BundleOptions = {}): Promise<BundleResult> {
  const result = await esbuild.build({
    entryPoints: [options.entry ?? BUNDLE_ENTRY],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    write: false,
    outfile: "ptkit.js",
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: options.minify ?? true,
    loader: { ".wasm": "binary" },
    logLevel: "silent",
    plugins: [browserOnly()],
  });
  const warnings = await esbuild.formatMessages(result.warnings, { kind: "warning" });
  return { code: result.outputFiles[0]!.text, warnings };
}

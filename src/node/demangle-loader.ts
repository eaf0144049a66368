/**
 * The {@link Demangler} for Node: reads gecko-profiler-demangle's WebAssembly module
 * from node_modules (the analysis layer takes bytes, not paths) and requires its glue
 * module, an ES module: Node 20.19 and later require one synchronously; before that
 * the demangler cannot load (names stay mangled, with a warning), and nothing else
 * is the worse for it.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Demangler, type DemanglerGlue } from "../analysis/index.js";

/** Where the demangler's WebAssembly module is installed. */
export function demanglerWasmPath(): string {
  return createRequire(import.meta.url).resolve("gecko-profiler-demangle/index_bg.wasm");
}

/** The demangler, or a message saying why it cannot be loaded. */
export function loadDemangler(): Demangler | string {
  let path = "gecko-profiler-demangle/index_bg.wasm";
  try {
    path = demanglerWasmPath();
    const glue = createRequire(import.meta.url)("gecko-profiler-demangle/index_bg.js") as DemanglerGlue;
    return Demangler.instantiateSync(readFileSync(path), glue);
  } catch (e) {
    // (Node's own messages run over several lines: the first says it.)
    return `cannot load the demangler (${path}): ${(e as Error).message.split("\n")[0]}`;
  }
}

/**
 * The {@link Demangler} for Node: reads gecko-profiler-demangle's WebAssembly module
 * from node_modules (the analysis layer takes bytes, not paths).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Demangler } from "../analysis/index.js";

/** Where the demangler's WebAssembly module is installed. */
export function demanglerWasmPath(): string {
  return createRequire(import.meta.url).resolve("gecko-profiler-demangle/index_bg.wasm");
}

/** The demangler, or a message saying why it cannot be loaded. */
export function loadDemangler(): Demangler | string {
  let path = "gecko-profiler-demangle/index_bg.wasm";
  try {
    path = demanglerWasmPath();
    return Demangler.instantiateSync(readFileSync(path));
  } catch (e) {
    return `cannot load the demangler (${path}): ${(e as Error).message}`;
  }
}

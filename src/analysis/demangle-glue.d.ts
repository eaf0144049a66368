/**
 * Types for the wasm-bindgen glue of gecko-profiler-demangle (its package types only
 * the bundler entry, which imports the .wasm as a module and so cannot run in Node).
 */
declare module "gecko-profiler-demangle/index_bg.js" {
  /** Hand the glue the instance's exports; every later call goes through them. */
  export function __wbg_set_wasm(exports: unknown): void;
  /** C++ (Itanium), Rust legacy and v0 demangling; returns its input when nothing matched. */
  export function demangle_any(name: string): string;
  /** Imported by the wasm module itself. */
  export function __wbindgen_init_externref_table(): void;
}

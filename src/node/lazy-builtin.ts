/**
 * A Node builtin module loaded when first used, not when the module that needs it
 * loads: the executable's bundle initialises all of its modules at start-up
 * (tools/build/const-bindings.ts), and a builtin outside Node's start-up snapshot
 * costs a few milliseconds to load (node:worker_threads 2.6 ms, node:child_process
 * 1.7 ms on the bench machine) in every command, also where it is never used.
 *
 * ```ts
 * const workerThreads = lazyBuiltin<typeof import("node:worker_threads")>("node:worker_threads");
 * new (workerThreads().Worker)(entry);
 * ```
 */
import { createRequire } from "node:module";

export function lazyBuiltin<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= createRequire(import.meta.url)(name) as T;
    return loaded;
  };
}

/**
 * The CLI as one function: what the `ptkit` executable runs. The build bundles this
 * module and all it imports into one CommonJS file, which the executable (launch.ts)
 * runs through V8's code cache; main.ts runs it from the modules as they are.
 */
import { createRequire } from "node:module";
import type { WalkThreadTask } from "../node/walk-threads.js";
import { commandIo, runCli } from "./ptkit.js";

/**
 * A thread of ptkit perf's parallel walk, run from this bundle (see node/walk-threads.ts).
 * (Imported when called: the modules' entry, main.ts, loads this module in every command.)
 */
export async function walkThread(task: WalkThreadTask): Promise<void> {
  (await import("./perf/walk-thread.js")).runWalkThread(task);
}

/** Run the command line `argv` (without node and the script): the exit code. */
export async function main(argv: string[]): Promise<number> {
  // The isa layer loads iced-x86 (for instruction text) on its first use through
  // process.getBuiltinModule (Node 20.16+); older Nodes load it here, before any
  // command. Required, not imported: the bundle, compiled as a script, may not import().
  if (typeof process.getBuiltinModule !== "function")
    (await import("../isa/decode.js")).initIsaWith(createRequire(import.meta.url)("iced-x86"));
  return runCli(argv, commandIo());
}

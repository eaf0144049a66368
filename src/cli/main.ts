#!/usr/bin/env node
/** The `ptkit` executable. */
import { nodeIo } from "./node-io.js";
import { main } from "./ptkit.js";

const io = nodeIo();
try {
  // The isa layer loads iced-x86 on its first decode through process.getBuiltinModule
  // (Node 20.16+); older Nodes load it here, before any command, as they always did.
  if (typeof process.getBuiltinModule !== "function") await (await import("../isa/decode.js")).initIsa();
  process.exitCode = await main(process.argv.slice(2), io);
} catch (e) {
  if (typeof (e as NodeJS.ErrnoException).code === "string" && (e as Error).message) {
    // The system refused (a full disk, an unwritable output): say so plainly.
    io.stderr(`ptkit: ${(e as Error).message}\n`);
    process.exitCode = 1;
  } else {
    // Commands report bad input themselves: anything else is a bug in ptkit.
    io.stderr(
      `ptkit: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n` +
        "This is a bug in ptkit: please report it with the command line and, if you can, the input files.\n",
    );
    process.exitCode = 70; // EX_SOFTWARE
  }
}

#!/usr/bin/env node
/** The `ptkit` executable. */
import { commandIo, runCli } from "./ptkit.js";

// The isa layer loads iced-x86 (for instruction text) on its first use through process.getBuiltinModule
// (Node 20.16+); older Nodes load it here, before any command, as they always did.
if (typeof process.getBuiltinModule !== "function") await (await import("../isa/decode.js")).initIsa();
process.exitCode = await runCli(process.argv.slice(2), commandIo());

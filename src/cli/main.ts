#!/usr/bin/env node
/** The `ptkit` executable. */
import { nodeIo } from "./node-io.js";
import { runCli } from "./ptkit.js";

process.exitCode = runCli(process.argv.slice(2), nodeIo());

#!/usr/bin/env node
/** The `ptkit` executable. */
import { nodeIo } from "./node-io.js";
import { main } from "./ptkit.js";

process.exitCode = main(process.argv.slice(2), nodeIo());

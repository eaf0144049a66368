#!/usr/bin/env node
/** The `ptkit` executable from the modules as tsc writes them (the installed one is launch.ts's bundle). */
import { main } from "./entry.js";

process.exitCode = await main(process.argv.slice(2));

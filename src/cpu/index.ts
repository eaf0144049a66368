export { type Cpu, cpuErrata, ERRATA_NAMES, type Errata, type ErratumName, noErrata, packetQuirks, parseCpu } from "./errata.js";
export { parseCInt, parseCUint } from "./c-int.js";

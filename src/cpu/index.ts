export { type Cpu, cpuErrata, ERRATA_NAMES, type Errata, type ErratumName, noErrata, parseCInt, parseCpu } from "./errata.js";

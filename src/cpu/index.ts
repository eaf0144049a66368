export { parseCInt, parseCUint } from "../base/c-int.js";
export {
  type Cpu,
  cpuErrata,
  ERRATA_NAMES,
  type Errata,
  type ErratumName,
  noErrata,
  packetQuirks,
  parseCpu,
} from "./errata.js";

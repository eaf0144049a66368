/** Packet generation: executions in, the packets the processor would write out. */
export { type GenConfig, type GenOptions, resolveOptions } from "./config.js";
export { type GenFault, type GenResult, generate, PacketGenerator } from "./generator.js";
export { RET_STACK_DEPTH } from "./ret-stack.js";

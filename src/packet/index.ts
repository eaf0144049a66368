export { ErrorCode, errorMessage, PtError } from "../base/errors.js";
export { type Halves, hex64, splitBigInt, toBigInt } from "../base/halves.js";
export {
  type BlockContext,
  DecodeQuirk,
  decodePacket,
  EXT2_MNT,
  ExtOpcode,
  nextBlockContext,
  Opcode,
  PSB_SIZE,
} from "./decode.js";
export { PacketDecoder } from "./decoder.js";
export { compressIp, encodedSize, encodePacket, PacketEncoder } from "./encode.js";
export { LastIp } from "./last-ip.js";
export { collectStats, type DecodeErrorRecord, type StatsOptions, type TraceStats } from "./stats.js";
export { isPsbAt, syncBackward, syncForward, syncForwardIn } from "./sync.js";
export { DEFAULT_TRACE_WINDOW, TraceBytes, type TraceSource } from "./trace-bytes.js";
export {
  CfeType,
  EvdType,
  Flag,
  IPC_PAYLOAD_BYTES,
  Ipc,
  PACKET_NAMES,
  PACKET_TYPE_COUNT,
  Packet,
  PacketType,
} from "./types.js";

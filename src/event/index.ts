export { Clock } from "./clock.js";
export { type AddrFilter, type DecoderConfig, defaultDecoderConfig } from "./config.js";
export { EventDecoder } from "./decoder.js";
export { EVENT_NAMES, EVENT_TYPE_COUNT, EventFlag, EventType, execMode, PtEvent, Status } from "./types.js";

/**
 * One error enum for every layer, numbered and worded like libipt's `pt_error_code`
 * so that messages match ptdump/ptxed output. Functions return `-code` (a negative
 * number) on failure, as libipt does; hot loops never throw.
 */
import { FileDiagnostic } from "./diagnostic.js";

export const ErrorCode = {
  Ok: 0,
  Internal: 1,
  Invalid: 2,
  NoSync: 3,
  BadOpcode: 4,
  BadPacket: 5,
  BadContext: 6,
  Eos: 7,
  BadQuery: 8,
  NoMem: 9,
  BadConfig: 10,
  NoIp: 11,
  IpSuppressed: 12,
  NoMap: 13,
  BadInsn: 14,
  NoTime: 15,
  NoCbr: 16,
  BadImage: 17,
  BadLock: 18,
  NotSupported: 19,
  RetStackEmpty: 20,
  BadRetComp: 21,
  BadStatusUpdate: 22,
  NoEnable: 23,
  EventIgnored: 24,
  Overflow: 25,
  BadFile: 26,
  BadCpu: 27,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const MESSAGES: readonly string[] = [
  "OK",
  "internal error",
  "invalid argument",
  "decoder out of sync",
  "unknown opcode",
  "unknown packet",
  "unexpected packet context",
  "reached end of trace stream",
  "trace stream does not match query",
  "out of memory",
  "bad configuration",
  "no ip",
  "ip has been suppressed",
  "no memory mapped at this address",
  "unknown instruction",
  "no timing information",
  "no core:bus ratio",
  "bad image",
  "locking error",
  "not supported",
  "compressed return without call",
  "bad compressed return",
  "bad status update",
  "expected tracing enabled event",
  "event ignored",
  "overflow",
  "bad file",
  "unknown cpu",
];

/** The message for an error code; accepts the negative form that functions return. */
export function errorMessage(code: number): string {
  const index = code < 0 ? -code : code;
  return MESSAGES[index] ?? "internal error.";
}

/**
 * A decoding error at an offset, thrown only at API edges (never inside decode loops):
 * a {@link FileDiagnostic} whose message also names the libipt error, as
 * `detail: bad packet at offset 0x10`.
 */
export class PtError extends FileDiagnostic {
  readonly byte: number | undefined;

  constructor(code: number, offset: number, byte?: number, detail?: string) {
    const b = byte === undefined ? "" : ` (byte 0x${byte.toString(16).padStart(2, "0")})`;
    super(code, offset, `${detail ? `${detail}: ` : ""}${errorMessage(code)}${b}`);
    this.name = "PtError";
    this.byte = byte;
  }
}

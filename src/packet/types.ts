/**
 * The packet record shared by the decoder and the encoder.
 *
 * Decoding fills one reusable {@link Packet}; nothing is allocated per packet. Every
 * field is a plain number, so the object keeps one shape for the whole decode loop.
 * 64-bit payloads travel as two unsigned 32-bit halves (`lo`, `hi`); {@link toBigInt}
 * joins them at the API edge.
 *
 * Field use per type (fields not listed are 0):
 *
 * | type                  | lo/hi                | a                 | b               | flags              |
 * |-----------------------|----------------------|-------------------|-----------------|--------------------|
 * | Fup, Tip, TipPge/Pgd  | raw IP payload       | IPBytes (ipc)     |                 |                    |
 * | Tnt8, Tnt64           | taken bits, oldest = bit a-1 | bit count |                 |                    |
 * | Pip                   | CR3 (payload>>1<<5)  |                   |                 | Nr                 |
 * | ModeExec              |                      |                   |                 | CsL, CsD, If       |
 * | ModeTsx               |                      |                   |                 | InTx, Abort        |
 * | Cbr                   |                      | core:bus ratio    |                 |                    |
 * | Tsc                   | TSC (56 bits)        |                   |                 |                    |
 * | Mtc                   |                      | CTC[7:0] payload  |                 |                    |
 * | Tma                   |                      | CTC[15:0]         | fast counter    |                    |
 * | Cyc                   | cycle count          |                   |                 |                    |
 * | Vmcs                  | VMCS base (<<12)     |                   |                 |                    |
 * | Mnt                   | payload              |                   |                 |                    |
 * | Ptw                   | payload              | payload bytes 4/8 |                 | Ip                 |
 * | Exstop                |                      |                   |                 | Ip                 |
 * | Mwait                 |                      | hints             | extensions      |                    |
 * | Pwre                  |                      | C-state           | sub C-state     | Hw                 |
 * | Pwrx                  |                      | last core C-state | deepest C-state | WakeInt/Store/Hw   |
 * | Bbp                   |                      | block type        |                 | Bip4               |
 * | Bip                   | payload              | item id           | bytes 4/8       |                    |
 * | Bep                   |                      |                   |                 | Ip                 |
 * | Cfe                   |                      | event type        | vector          | Ip                 |
 * | Evd                   | payload              | data type         |                 |                    |
 * | Trig                  |                      | TRBV              | icnt            | Ip, Mult, Icntv    |
 */

import { doubleFields, splitBigInt, toBigInt } from "../base/halves.js";

/** Packet types. Numbering is ptkit's own; names follow the SDM. */
export const PacketType = {
  /** Not a packet: the decoder failed here. */
  Bad: 0,
  Pad: 1,
  Psb: 2,
  PsbEnd: 3,
  Tnt8: 4,
  Tnt64: 5,
  Tip: 6,
  TipPge: 7,
  TipPgd: 8,
  Fup: 9,
  Pip: 10,
  ModeExec: 11,
  ModeTsx: 12,
  /** TraceStop. */
  Stop: 13,
  Cbr: 14,
  Tsc: 15,
  Mtc: 16,
  Tma: 17,
  Cyc: 18,
  Vmcs: 19,
  Ovf: 20,
  Mnt: 21,
  Ptw: 22,
  Exstop: 23,
  Mwait: 24,
  Pwre: 25,
  Pwrx: 26,
  Bbp: 27,
  Bip: 28,
  Bep: 29,
  Cfe: 30,
  Evd: 31,
  Trig: 32,
  /** Bytes an erratum corrupted into something that is no packet (SKZ84). */
  Invalid: 33,
} as const;
export type PacketType = (typeof PacketType)[keyof typeof PacketType];

/** Number of packet types, for tables indexed by type. */
export const PACKET_TYPE_COUNT = 34;

/** Lower-case names as ptdump prints them (mode packets print with their leaf). */
export const PACKET_NAMES: readonly string[] = [
  "bad",
  "pad",
  "psb",
  "psbend",
  "tnt.8",
  "tnt.64",
  "tip",
  "tip.pge",
  "tip.pgd",
  "fup",
  "pip",
  "mode.exec",
  "mode.tsx",
  "stop",
  "cbr",
  "tsc",
  "mtc",
  "tma",
  "cyc",
  "vmcs",
  "ovf",
  "mnt",
  "ptw",
  "exstop",
  "mwait",
  "pwre",
  "pwrx",
  "bbp",
  "bip",
  "bep",
  "cfe",
  "evd",
  "trig",
  "<invalid>",
];

/** Single-bit packet attributes, stored in {@link Packet.flags}. */
export const Flag = {
  /** EXSTOP, PTW, BEP, CFE, TRIG: an IP packet (FUP) binds to this packet. */
  Ip: 1 << 0,
  /** PIP: non-root (guest) CR3. */
  Nr: 1 << 1,
  /** MODE.Exec: CS.L (64-bit code). */
  CsL: 1 << 2,
  /** MODE.Exec: CS.D (32-bit default operand size). */
  CsD: 1 << 3,
  /** MODE.Exec: RFLAGS.IF. */
  If: 1 << 4,
  /** MODE.TSX: in transaction. */
  InTx: 1 << 5,
  /** MODE.TSX: transaction aborted. */
  Abort: 1 << 6,
  /** PWRE: C-state entry initiated by hardware. */
  Hw: 1 << 7,
  /** PWRX: woken by an interrupt. */
  WakeInt: 1 << 8,
  /** PWRX: woken by a store to a monitored address. */
  WakeStore: 1 << 9,
  /** PWRX: woken autonomously by hardware. */
  WakeHw: 1 << 10,
  /** TRIG: more than one trigger hit. */
  Mult: 1 << 11,
  /** TRIG: the instruction count field is valid. */
  Icntv: 1 << 12,
  /** BBP: the block's BIP payloads are 4 bytes (else 8). */
  Bip4: 1 << 13,
} as const;

/** IPBytes encodings of FUP/TIP packets (Table 36-18). */
export const Ipc = {
  Suppressed: 0,
  Update16: 1,
  Update32: 2,
  Sext48: 3,
  Update48: 4,
  Full: 6,
} as const;
export type Ipc = (typeof Ipc)[keyof typeof Ipc];

/** Payload bytes of each IPBytes encoding; -1 marks the reserved ones. */
export const IPC_PAYLOAD_BYTES: readonly number[] = [0, 2, 4, 6, 6, -1, 8, -1];

/** CFE event types (SDM "Event Trace"). */
export const CfeType = {
  Intr: 1,
  Iret: 2,
  Smi: 3,
  Rsm: 4,
  Sipi: 5,
  Init: 6,
  VmEntry: 7,
  VmExit: 8,
  VmExitIntr: 9,
  Shutdown: 10,
  Uintr: 12,
  Uiret: 13,
  SwIntr: 14,
  Syscall: 15,
} as const;

/** EVD data types. */
export const EvdType = {
  Cr2: 0,
  VmxQualification: 1,
  VmxReason: 2,
} as const;

/** A decoded packet. One instance is reused for every packet of a decode loop. */
export class Packet {
  type: PacketType = PacketType.Bad;
  /** Size in bytes, opcode included. */
  size = 0;
  /** Low 32 bits of the 64-bit payload (unsigned). */
  lo = 0;
  /** High 32 bits of the 64-bit payload (unsigned). */
  hi = 0;
  /** First small field; see the table at the top of this module. */
  a = 0;
  /** Second small field; see the table at the top of this module. */
  b = 0;
  /** {@link Flag} bits. */
  flags = 0;

  /** Reset every field, for reuse by encoders and tests. */
  clear(): this {
    this.type = PacketType.Bad;
    this.size = 0;
    this.lo = 0;
    this.hi = 0;
    this.a = 0;
    this.b = 0;
    this.flags = 0;
    return this;
  }

  copyFrom(other: Packet): this {
    this.type = other.type;
    this.size = other.size;
    this.lo = other.lo;
    this.hi = other.hi;
    this.a = other.a;
    this.b = other.b;
    this.flags = other.flags;
    return this;
  }

  /** The 64-bit payload as an exact BigInt (API edge only, never in loops). */
  get payload(): bigint {
    return toBigInt(this.hi, this.lo);
  }

  set payload(value: bigint) {
    splitBigInt(value, this);
  }
}
// Addresses: see doubleFields.
doubleFields(new Packet(), ["lo", "hi"]);

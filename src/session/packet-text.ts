/**
 * Packet payloads as ptdump prints them. Each function returns the payload column
 * for one packet type; fields are truncated like ptdump's fixed-size buffers.
 */
import { Flag, hex64, Ipc, type Packet, PacketType } from "../packet/index.js";

/** Column widths of ptdump's buffers (their C sizes, NUL included). */
export const Width = { offset: 17, raw: 33, opcode: 10, payload: 25, extended: 48, trackId: 5, track: 17 };

/** snprintf into a buffer of `size` bytes keeps at most size-1 characters. */
export function fit(text: string, size: number): string {
  return text.length < size ? text : text.slice(0, size - 1);
}

export function ipPayload(pkt: Packet): string {
  const ipc = pkt.a;
  switch (ipc) {
    case Ipc.Suppressed:
      return "0: ????????????????";
    case Ipc.Update16:
      return `1: ????????????${hex64(0, pkt.lo & 0xffff, 4)}`;
    case Ipc.Update32:
      return `2: ????????${hex64(0, pkt.lo, 8)}`;
    case Ipc.Update48:
      return `4: ????${hex64(pkt.hi & 0xffff, pkt.lo, 12)}`;
    case Ipc.Sext48: {
      const hi = pkt.hi & 0x8000 ? (pkt.hi | 0xffff0000) >>> 0 : pkt.hi & 0xffff;
      return `3: ${hex64(hi, pkt.lo)}`;
    }
    default:
      return `${ipc}: ${hex64(pkt.hi, pkt.lo)}`;
  }
}

/** TNT bits oldest first: '!' taken, '.' not taken. */
export function tntPayload(pkt: Packet): string {
  let s = "";
  for (let bit = pkt.a - 1; bit >= 0; bit--) {
    const set = bit >= 32 ? (pkt.hi >>> (bit - 32)) & 1 : (pkt.lo >>> bit) & 1;
    s += set ? "!" : ".";
  }
  return s;
}

/** The names whose flag is set in `flags`, joined by ", ". */
function flagNames(flags: number, names: ReadonlyArray<readonly [number, string]>): string {
  return names
    .filter(([bit]) => flags & bit)
    .map(([, name]) => name)
    .join(", ");
}

const EXEC_FLAGS = [
  [Flag.CsD, "cs.d"],
  [Flag.CsL, "cs.l"],
  [Flag.If, "if"],
] as const;
const TSX_FLAGS = [
  [Flag.InTx, "intx"],
  [Flag.Abort, "abrt"],
] as const;

const CFE_NAMES: Record<number, string> = {
  1: "intr",
  2: "iret",
  3: "smi",
  4: "rsm",
  5: "sipi",
  6: "init",
  7: "vmentry",
  8: "vmexit",
  9: "vmexit_intr",
  10: "shutdown",
  12: "uintr",
  13: "uiret",
  14: "swintr",
  15: "syscall",
};

const EVD_NAMES: Record<number, string> = { 0: "cr2", 1: "vmxq", 2: "vmxr" };

export function cfeTypeName(type: number): string {
  return CFE_NAMES[type] ?? "unknown";
}

export function evdTypeName(type: number): string {
  return EVD_NAMES[type] ?? "unknown";
}

function cfePayload(pkt: Packet): string {
  const ip = pkt.flags & Flag.Ip ? ", ip" : "";
  switch (pkt.a) {
    case 1:
    case 9:
    case 12:
    case 14:
      return `${pkt.a}: ${pkt.b}${ip}`;
    case 5:
      return `${pkt.a}: ${pkt.b.toString(16)}${ip}`;
    default:
      return `${pkt.a}${ip}`;
  }
}

const WAKE_REASONS = [
  [Flag.WakeInt, "int"],
  [Flag.WakeStore, " st"],
  [Flag.WakeHw, " hw"],
] as const;

/** ptdump names exactly one wake reason; none or several is "bad". */
function pwrxWake(flags: number): string {
  const set = WAKE_REASONS.filter(([bit]) => flags & bit);
  return set.length === 1 ? set[0]![1] : "bad";
}

/**
 * The payload column (without tracking columns) of every packet type that has one;
 * "" for packets that print only their name.
 */
export function payloadText(pkt: Packet): string {
  const f = pkt.flags;
  switch (pkt.type) {
    case PacketType.Fup:
    case PacketType.Tip:
    case PacketType.TipPge:
    case PacketType.TipPgd:
      return ipPayload(pkt);
    case PacketType.Tnt8:
    case PacketType.Tnt64:
      return tntPayload(pkt);
    case PacketType.Pip:
      return `${hex64(pkt.hi, pkt.lo, 1)}${f & Flag.Nr ? ", nr" : ""}`;
    case PacketType.Vmcs:
    case PacketType.Tsc:
    case PacketType.Cyc:
    case PacketType.Mnt:
      return hex64(pkt.hi, pkt.lo, 1);
    case PacketType.ModeExec:
      return flagNames(f, EXEC_FLAGS);
    case PacketType.ModeTsx:
      return flagNames(f, TSX_FLAGS);
    case PacketType.Cbr:
    case PacketType.Mtc:
      return pkt.a.toString(16);
    case PacketType.Tma:
      return `${pkt.a.toString(16)}, ${pkt.b.toString(16)}`;
    case PacketType.Exstop:
      return f & Flag.Ip ? "ip" : "";
    case PacketType.Mwait:
      return `${hex64(0, pkt.a, 8)}, ${hex64(0, pkt.b, 8)}`;
    case PacketType.Pwre:
      return `c${(pkt.a + 1) & 0xf}.${(pkt.b + 1) & 0xf}${f & Flag.Hw ? ", hw" : ""}`;
    case PacketType.Pwrx:
      return `${pwrxWake(f)}: c${(pkt.a + 1) & 0xf}, c${(pkt.b + 1) & 0xf}`;
    case PacketType.Ptw:
      return `${pkt.a === 8 ? 1 : 0}: ${hex64(pkt.hi, pkt.lo, 1)}${f & Flag.Ip ? ", ip" : ""}`;
    case PacketType.Cfe:
      return cfePayload(pkt);
    case PacketType.Evd:
      return `${pkt.a}: ${hex64(pkt.hi, pkt.lo, 1)}`;
    case PacketType.Trig: {
      const base = `${hex64(0, pkt.a, 2)}${f & Flag.Ip ? ", ip" : ""}${f & Flag.Mult ? ", mult" : ""}`;
      return f & Flag.Icntv ? `${base}, icnt: ${pkt.b}` : base;
    }
    case PacketType.Bbp:
      return `type ${pkt.a.toString(16)}, ${f & Flag.Bip4 ? 4 : 8}-byte`;
    case PacketType.Bip:
      return `${pkt.a.toString(16)}: ${hex64(pkt.hi, pkt.lo, 1)}`;
    case PacketType.Bep:
      return f & Flag.Ip ? "ip" : "";
    default:
      return "";
  }
}

/** TNT and TRIG use ptdump's wider "extended" payload buffer. */
export function usesExtendedPayload(type: number): boolean {
  return type === PacketType.Tnt8 || type === PacketType.Tnt64 || type === PacketType.Trig;
}

/**
 * Test helpers for the event layer: a trace builder over PacketEncoder, a decoder
 * loop collecting events, and a one-line description of an event per type, so that
 * tests compare readable event lists.
 */

import { ErrorCode, errorMessage } from "../../src/base/errors.js";
import { hex64, splitBigInt } from "../../src/base/halves.js";
import { noErrata } from "../../src/cpu/errata.js";
import { type DecoderConfig, defaultDecoderConfig } from "../../src/event/config.js";
import { EventDecoder } from "../../src/event/decoder.js";
import { EVENT_NAMES, EventFlag, EventType, PtEvent } from "../../src/event/types.js";
import { PacketEncoder } from "../../src/packet/encode.js";
import { Flag, PACKET_NAMES, Packet, PacketType } from "../../src/packet/types.js";

/** Builds a trace packet by packet; IPs are compressed like the processor does. */
export class Trace {
  readonly enc = new PacketEncoder();
  private readonly pkt = new Packet();

  private put(
    type: PacketType,
    f: { lo?: number; hi?: number; a?: number; b?: number; flags?: number } = {},
  ): this {
    const p = this.pkt.clear();
    p.type = type;
    p.lo = f.lo ?? 0;
    p.hi = f.hi ?? 0;
    p.a = f.a ?? 0;
    p.b = f.b ?? 0;
    p.flags = f.flags ?? 0;
    const n = this.enc.emit(p);
    if (n < 0) throw new Error(`cannot encode ${PACKET_NAMES[type]}: ${n}`);
    return this;
  }

  private ip(type: PacketType, ip: bigint | undefined): this {
    const n =
      ip === undefined
        ? this.enc.emitSuppressed(type)
        : this.enc.emitIp(type, Number((ip >> 32n) & 0xffffffffn), Number(ip & 0xffffffffn));
    if (n < 0) throw new Error(`cannot encode IP packet ${type}`);
    return this;
  }

  private big(type: PacketType, value: bigint, f: { a?: number; b?: number; flags?: number } = {}): this {
    const h = splitBigInt(value, { hi: 0, lo: 0 });
    return this.put(type, { ...f, lo: h.lo, hi: h.hi });
  }

  psb(): this {
    return this.put(PacketType.Psb);
  }
  psbend(): this {
    return this.put(PacketType.PsbEnd);
  }
  pad(): this {
    return this.put(PacketType.Pad);
  }
  fup(ip?: bigint): this {
    return this.ip(PacketType.Fup, ip);
  }
  tip(ip?: bigint): this {
    return this.ip(PacketType.Tip, ip);
  }
  pge(ip?: bigint): this {
    return this.ip(PacketType.TipPge, ip);
  }
  pgd(ip?: bigint): this {
    return this.ip(PacketType.TipPgd, ip);
  }
  /** TNT from a string of '!' (taken) and '.' (not taken), oldest first. */
  tnt(bits: string): this {
    let lo = 0;
    let hi = 0;
    for (const c of bits) {
      hi = ((hi << 1) | (lo >>> 31)) >>> 0;
      lo = ((lo << 1) | (c === "!" ? 1 : 0)) >>> 0;
    }
    return this.put(bits.length <= 6 ? PacketType.Tnt8 : PacketType.Tnt64, { lo, hi, a: bits.length });
  }
  mode(bits: 16 | 32 | 64 | 0, iflag = false): this {
    const cs = bits === 64 ? Flag.CsL : bits === 32 ? Flag.CsD : bits === 0 ? Flag.CsL | Flag.CsD : 0;
    return this.put(PacketType.ModeExec, { flags: cs | (iflag ? Flag.If : 0) });
  }
  tsx(intx: boolean, abort = false): this {
    return this.put(PacketType.ModeTsx, { flags: (intx ? Flag.InTx : 0) | (abort ? Flag.Abort : 0) });
  }
  pip(cr3: bigint, nonRoot = false): this {
    return this.big(PacketType.Pip, cr3, { flags: nonRoot ? Flag.Nr : 0 });
  }
  vmcs(base: bigint): this {
    return this.big(PacketType.Vmcs, base);
  }
  tsc(value: bigint): this {
    return this.big(PacketType.Tsc, value);
  }
  cbr(ratio: number): this {
    return this.put(PacketType.Cbr, { a: ratio });
  }
  mtc(ctc: number): this {
    return this.put(PacketType.Mtc, { a: ctc });
  }
  tma(ctc: number, fc: number): this {
    return this.put(PacketType.Tma, { a: ctc, b: fc });
  }
  cyc(cycles: number): this {
    return this.put(PacketType.Cyc, { lo: cycles });
  }
  ovf(): this {
    return this.put(PacketType.Ovf);
  }
  stop(): this {
    return this.put(PacketType.Stop);
  }
  mnt(payload: bigint): this {
    return this.big(PacketType.Mnt, payload);
  }
  ptw(payload: bigint, bytes: 4 | 8, ip: boolean): this {
    return this.big(PacketType.Ptw, payload, { a: bytes, flags: ip ? Flag.Ip : 0 });
  }
  exstop(ip: boolean): this {
    return this.put(PacketType.Exstop, { flags: ip ? Flag.Ip : 0 });
  }
  mwait(hints: number, ext: number): this {
    return this.put(PacketType.Mwait, { a: hints, b: ext });
  }
  pwre(state: number, subState: number, hw = false): this {
    return this.put(PacketType.Pwre, { a: state, b: subState, flags: hw ? Flag.Hw : 0 });
  }
  pwrx(last: number, deepest: number, flags = 0): this {
    return this.put(PacketType.Pwrx, { a: last, b: deepest, flags });
  }
  cfe(type: number, vector: number, ip: boolean): this {
    return this.put(PacketType.Cfe, { a: type, b: vector, flags: ip ? Flag.Ip : 0 });
  }
  evd(type: number, payload: bigint): this {
    return this.big(PacketType.Evd, payload, { a: type });
  }
  trig(trbv: number, opts: { icnt?: number; ip?: boolean; mult?: boolean } = {}): this {
    const flags =
      (opts.ip ? Flag.Ip : 0) | (opts.mult ? Flag.Mult : 0) | (opts.icnt !== undefined ? Flag.Icntv : 0);
    return this.put(PacketType.Trig, { a: trbv, b: opts.icnt ?? 0, flags });
  }
  raw(...bytes: number[]): this {
    // Encode as PADs, then overwrite: keeps the encoder's length bookkeeping.
    const at = this.enc.length;
    for (let i = 0; i < bytes.length; i++) this.pad();
    this.enc.bytes().set(bytes, at);
    return this;
  }

  get length(): number {
    return this.enc.length;
  }

  bytes(): Uint8Array {
    return this.enc.bytes().slice();
  }
}

export function config(f: Partial<DecoderConfig> = {}, errata: string[] = []): DecoderConfig {
  const c = { ...defaultDecoderConfig(), ...f };
  c.errata = { ...noErrata() };
  for (const e of errata) (c.errata as Record<string, boolean>)[e] = true;
  return c;
}

const hex = (hi: number, lo: number) => `0x${hex64(hi, lo, 1)}`;

/** One line per event: name, the fields its type uses, then markers. */
export function describe(ev: PtEvent): string {
  const parts: string[] = [EVENT_NAMES[ev.type] ?? `type${ev.type}`];
  const ip = ev.ipSuppressed ? "-" : hex(ev.ipHi, ev.ipLo);
  const payload = hex(ev.payloadHi, ev.payloadLo);
  const f = ev.flags;
  switch (ev.type) {
    case EventType.Enabled:
    case EventType.Disabled:
    case EventType.Overflow:
    case EventType.Exstop:
    case EventType.Tip:
    case EventType.Iret:
    case EventType.Smi:
    case EventType.Rsm:
    case EventType.Init:
    case EventType.Vmentry:
    case EventType.Shutdown:
    case EventType.Uiret:
    case EventType.Syscall:
    case EventType.Tick:
      parts.push(ip);
      break;
    case EventType.AsyncDisabled:
    case EventType.AsyncBranch:
      parts.push(`${hex(ev.fromHi, ev.fromLo)}->${ip}`);
      break;
    case EventType.Paging:
      parts.push(payload + (f & EventFlag.NonRoot ? " nr" : ""));
      break;
    case EventType.AsyncPaging:
      parts.push(payload + (f & EventFlag.NonRoot ? " nr" : ""), ip);
      break;
    case EventType.ExecMode:
      parts.push(["?", "16", "32", "64"][ev.mode] ?? `m${ev.mode}`, ip);
      break;
    case EventType.Tsx:
      parts.push(f & EventFlag.Aborted ? "abort" : f & EventFlag.Speculative ? "begin" : "commit", ip);
      break;
    case EventType.Vmcs:
    case EventType.Mnt:
      parts.push(payload);
      break;
    case EventType.AsyncVmcs:
      parts.push(payload, ip);
      break;
    case EventType.Mwait:
      parts.push(`${ev.hints},${ev.ext}`, ip);
      break;
    case EventType.Pwre:
      parts.push(`${ev.state}.${ev.subState}${f & EventFlag.Hw ? " hw" : ""}`);
      break;
    case EventType.Pwrx:
      parts.push(`${ev.last},${ev.deepest}`);
      if (f & EventFlag.Interrupt) parts.push("int");
      if (f & EventFlag.Store) parts.push("st");
      if (f & EventFlag.Autonomous) parts.push("hw");
      break;
    case EventType.Ptwrite:
      parts.push(`${payload}/${ev.size}`, ip);
      break;
    case EventType.Cbr:
      parts.push(String(ev.ratio));
      break;
    case EventType.Tnt: {
      let bits = "";
      for (let i = ev.size - 1; i >= 0; i--) {
        const word = i >= 32 ? ev.payloadHi : ev.payloadLo;
        bits += (word >>> (i & 31)) & 1 ? "!" : ".";
      }
      parts.push(bits);
      break;
    }
    case EventType.Iflags:
      parts.push(f & EventFlag.Iflag ? "if=1" : "if=0", ip);
      break;
    case EventType.Interrupt:
      parts.push(`v${ev.vector}`, ip);
      if (f & EventFlag.HasCr2) parts.push(`cr2=${payload}`);
      break;
    case EventType.Sipi:
    case EventType.Uintr:
    case EventType.Swintr:
      parts.push(`v${ev.vector}`, ip);
      break;
    case EventType.Vmexit:
      parts.push(f & EventFlag.HasVector ? `v${ev.vector}` : "v-", ip);
      if (f & EventFlag.HasVmxr) parts.push(`vmxr=${payload}`);
      if (f & EventFlag.HasVmxq) parts.push(`vmxq=${hex(ev.payload2Hi, ev.payload2Lo)}`);
      break;
    case EventType.Trig:
      parts.push(`trbv=${ev.trbv}`, `icnt=${ev.icnt}`, ip);
      if (f & EventFlag.Mult) parts.push("mult");
      break;
  }
  if (ev.statusUpdate) parts.push("[status]");
  return parts.join(" ");
}

export interface Decoded {
  events: string[];
  /** Raw events, in order. */
  raw: PtEvent[];
  /** The error that ended decoding (-Eos at a clean end), as a message with offset. */
  end: string;
}

/** Sync forward and collect every event until the first error. */
export function decodeEvents(buf: Uint8Array, cfg: DecoderConfig = config(), limit = 10_000): Decoded {
  const dec = new EventDecoder(buf, cfg);
  const events: string[] = [];
  const raw: PtEvent[] = [];
  let status = dec.syncForward();
  const ev = new PtEvent();
  while (status >= 0 && events.length < limit) {
    status = dec.next(ev);
    if (status < 0) break;
    events.push(describe(ev));
    raw.push(new PtEvent().copyFrom(ev));
  }
  return { events, raw, end: status === -ErrorCode.Eos ? "eos" : `${errorMessage(status)} @${dec.offset}` };
}

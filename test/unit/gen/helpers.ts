/**
 * Test helpers for the packet generator: register files configured by field name,
 * executions from JSON Lines, and packet lists in a compact text form.
 */

import { hex64 } from "../../../src/base/halves.js";
import { PacketDecoder } from "../../../src/packet/decoder.js";
import { LastIp } from "../../../src/packet/last-ip.js";
import { Flag, Ipc, Packet, PacketType } from "../../../src/packet/types.js";
import type { BitField } from "../../../src/unit/bits.js";
import { setField } from "../../../src/unit/bits.js";
import type { PtCapabilities } from "../../../src/unit/capabilities.js";
import { readExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { type GenOptions, generate } from "../../../src/unit/gen/index.js";
import { MsrFile } from "../../../src/unit/msr-file.js";
import { CTL, Msr } from "../../../src/unit/msr-layout.js";
import { type PresetName, presetCapabilities } from "../../../src/unit/presets.js";

export type CtlFields = Partial<Record<keyof typeof CTL, number | boolean>>;

/** IA32_RTIT_CTL halves from field names (CTL keys); unnamed fields are 0. */
export function ctl(fields: CtlFields): { hi: number; lo: number } {
  const out = { hi: 0, lo: 0 };
  for (const [key, v] of Object.entries(fields)) {
    setField(out, CTL[key as keyof typeof CTL] as BitField, v === true ? 1 : v === false ? 0 : (v as number));
  }
  return out;
}

export interface MsrSetup {
  preset?: PresetName;
  caps?: Partial<PtCapabilities>;
  ctl: CtlFields;
  /** [A, B] per range index. */
  ranges?: [bigint, bigint][];
  cr3Match?: bigint;
  /** IA32_RTIT_STATUS before tracing starts. */
  status?: bigint;
}

/** A register file configured as software would: everything else first, IA32_RTIT_CTL last. */
export function msrs(setup: MsrSetup): MsrFile {
  const m = new MsrFile({ ...presetCapabilities(setup.preset ?? "skylake"), ...setup.caps });
  const must = (fault: unknown) => {
    if (fault) throw new Error(`WRMSR faulted: ${JSON.stringify(fault)}`);
  };
  setup.ranges?.forEach(([a, b], n) => {
    must(m.writeMsr(Msr.Addr0A + 2 * n, a));
    must(m.writeMsr(Msr.Addr0B + 2 * n, b));
  });
  if (setup.cr3Match !== undefined) must(m.writeMsr(Msr.Cr3Match, setup.cr3Match));
  if (setup.status !== undefined) must(m.writeMsr(Msr.Status, setup.status));
  // Single-range output needs a valid mask; the generator tests do not use output.
  const c = ctl(setup.ctl);
  must(m.wrmsr(Msr.Ctl, c.hi, c.lo));
  return m;
}

/** The usual user+kernel branch-tracing configuration, TraceEn=1. */
export const BRANCHES: CtlFields = { TraceEn: 1, BranchEn: 1, OS: 1, User: 1, ToPA: 1 };

/** Generate from JSON Lines with a fresh register file; returns the packet list. */
export function gen(jsonl: string, setup: MsrSetup, options: Partial<GenOptions> = {}): string[] {
  return packetList(genBytes(jsonl, setup, options));
}

export function genBytes(jsonl: string, setup: MsrSetup, options: Partial<GenOptions> = {}): Uint8Array {
  const exec = readExecJsonl(jsonl);
  return generate(exec, { cyclesPerInsn: 0, ...options, msrs: msrs(setup) }).bytes;
}

/** JSON Lines from record objects (hand-written executions stay readable). */
export function jsonl(...records: object[]): string {
  return `${records.map((r) => JSON.stringify(r)).join("\n")}\n`;
}

const modeName = (flags: number): string => (flags & Flag.CsL ? "64" : flags & Flag.CsD ? "32" : "16");

/** Decode a trace into one compact line per packet; IPs are reconstructed ("-" when suppressed). */
export function packetList(bytes: Uint8Array): string[] {
  const d = new PacketDecoder(bytes);
  const pkt = new Packet();
  const last = new LastIp();
  const out: string[] = [];
  if (bytes.length === 0) return out;
  d.syncSet(0);
  for (;;) {
    const size = d.next(pkt);
    if (size < 0) {
      if (d.pos < bytes.length) out.push(`error at ${d.pos}`);
      return out;
    }
    out.push(describe(pkt, last));
  }
}

function describe(p: Packet, last: LastIp): string {
  switch (p.type) {
    case PacketType.Psb:
      last.reset();
      return "psb";
    case PacketType.Tip:
    case PacketType.TipPge:
    case PacketType.TipPgd:
    case PacketType.Fup: {
      const name = {
        [PacketType.Tip]: "tip",
        [PacketType.TipPge]: "tip.pge",
        [PacketType.TipPgd]: "tip.pgd",
      }[p.type as number];
      last.update(p);
      const ip = p.a === Ipc.Suppressed ? "-" : `0x${hex64(last.hi, last.lo, 1)}`;
      return `${name ?? "fup"} ${ip}`;
    }
    case PacketType.Tnt8:
    case PacketType.Tnt64: {
      let s = "";
      for (let i = p.a - 1; i >= 0; i--) {
        const bit = i >= 32 ? (p.hi >>> (i - 32)) & 1 : (p.lo >>> i) & 1;
        s += bit ? "T" : "N";
      }
      return `${p.type === PacketType.Tnt8 ? "tnt" : "tnt64"} ${s}`;
    }
    case PacketType.ModeExec:
      return `mode.exec ${modeName(p.flags)}${p.flags & Flag.If ? " if" : ""}`;
    case PacketType.ModeTsx:
      return `mode.tsx ${p.flags & Flag.Abort ? "abort" : p.flags & Flag.InTx ? "begin" : "commit"}`;
    case PacketType.Pip:
      return `pip 0x${hex64(p.hi, p.lo, 1)}${p.flags & Flag.Nr ? " nr" : ""}`;
    case PacketType.Vmcs:
      return `vmcs 0x${hex64(p.hi, p.lo, 1)}`;
    case PacketType.Tsc:
      return `tsc 0x${hex64(p.hi, p.lo, 1)}`;
    case PacketType.Tma:
      return `tma ${p.a} ${p.b}`;
    case PacketType.Mtc:
      return `mtc ${p.a}`;
    case PacketType.Cyc:
      return `cyc ${p.hi * 2 ** 32 + p.lo}`;
    case PacketType.Cbr:
      return `cbr ${p.a}`;
    case PacketType.Ptw:
      return `ptw 0x${hex64(p.hi, p.lo, 1)}/${p.a}${p.flags & Flag.Ip ? " ip" : ""}`;
    case PacketType.Exstop:
      return `exstop${p.flags & Flag.Ip ? " ip" : ""}`;
    case PacketType.Mwait:
      return `mwait ${p.a} ${p.b}`;
    case PacketType.Pwre:
      return `pwre c${p.a}.${p.b}${p.flags & Flag.Hw ? " hw" : ""}`;
    case PacketType.Pwrx: {
      const why = [
        p.flags & Flag.WakeInt ? "int" : "",
        p.flags & Flag.WakeStore ? "store" : "",
        p.flags & Flag.WakeHw ? "hw" : "",
      ];
      return `pwrx c${p.a} c${p.b} ${why.filter((w) => w).join(",")}`.trimEnd();
    }
    case PacketType.PsbEnd:
      return "psbend";
    case PacketType.Ovf:
      return "ovf";
    case PacketType.Stop:
      return "stop";
    case PacketType.Pad:
      return "pad";
    case PacketType.Cfe:
      return `cfe ${p.a}:${p.b}${p.flags & Flag.Ip ? " ip" : ""}`;
    case PacketType.Evd:
      return `evd ${p.a} 0x${hex64(p.hi, p.lo, 1)}`;
  }
  return `type ${p.type}`;
}

/** What tracing enabled at `ip` starts with under {@link BRANCHES} (no timing packets, CR3 0). */
export function opening(ip: string, pip = "pip 0x0"): string[] {
  return [
    "mode.exec 64",
    `tip.pge ${ip}`,
    "psb",
    "cbr 37",
    pip,
    "mode.tsx commit",
    "mode.exec 64",
    `fup ${ip}`,
    "psbend",
  ];
}

/** The packets after the first PSB+ (its PSBEND). */
export function afterPsb(list: readonly string[]): string[] {
  return list.slice(list.indexOf("psbend") + 1);
}

/** An instruction record; `cls` is an instruction class name. */
export const insn = (ip: number | string, size: number, cls?: string, extra: object = {}) => ({
  k: "insn",
  ip: typeof ip === "number" ? `0x${ip.toString(16)}` : ip,
  size,
  ...(cls ? { class: cls } : {}),
  ...extra,
});

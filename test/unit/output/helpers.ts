import assert from "node:assert/strict";
import { PacketEncoder } from "../../../src/packet/encode.js";
import { Packet, PacketType } from "../../../src/packet/types.js";
import type { PtCapabilities } from "../../../src/unit/capabilities.js";
import { encodeCtlBig, encodeOutputMaskPtrs, type RtitCtl } from "../../../src/unit/msr.js";
import { MsrFile } from "../../../src/unit/msr-file.js";
import { Msr } from "../../../src/unit/msr-layout.js";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import type { OutputPointers } from "../../../src/unit/output/reader.js";
import { OutputUnit, type OutputUnitOptions, type PmiEvent } from "../../../src/unit/output/unit.js";
import { type PresetName, presetCapabilities } from "../../../src/unit/presets.js";

export const caps = (name: PresetName, patch: Partial<PtCapabilities> = {}): PtCapabilities => ({
  ...presetCapabilities(name),
  ...patch,
});

/** A small deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Stream {
  bytes: Uint8Array;
  /** Offsets where a PSB was emitted, ascending. */
  psbs: number[];
}

/** An encoded packet stream of at least `length` bytes: PSB+PSBEND, then packets, a PSB every ~`psbEvery` bytes. */
export function makeStream(seed: number, length: number, psbEvery = 1024): Stream {
  const r = rng(seed);
  const enc = new PacketEncoder(length + 64);
  const p = new Packet();
  const psbs: number[] = [];
  let nextPsb = 0;
  while (enc.length < length) {
    if (enc.length >= nextPsb) {
      psbs.push(enc.length);
      p.clear().type = PacketType.Psb;
      enc.emit(p);
      enc.emit(Object.assign(new Packet(), { type: PacketType.PsbEnd }));
      nextPsb = enc.length + psbEvery;
      continue;
    }
    const k = Math.floor(r() * 5);
    const q = new Packet();
    if (k === 0) {
      q.type = PacketType.Tnt8;
      q.a = 6;
      q.lo = Math.floor(r() * 64);
      enc.emit(q);
    } else if (k === 1) {
      enc.emitIp(PacketType.Tip, 0, (0x400000 + Math.floor(r() * 0x100000)) >>> 0);
    } else if (k === 2) {
      q.type = PacketType.Cbr;
      q.a = 1 + Math.floor(r() * 60);
      enc.emit(q);
    } else if (k === 3) {
      q.type = PacketType.Tsc;
      q.lo = Math.floor(r() * 2 ** 32) >>> 0;
      q.hi = Math.floor(r() * 0x1000000);
      enc.emit(q);
    } else {
      q.type = PacketType.Mtc;
      q.a = Math.floor(r() * 256);
      enc.emit(q);
    }
  }
  return { bytes: enc.bytes().slice(), psbs };
}

/** The bytes a reader gives after a wrap: from the first PSB at or after `accepted - ring` to `accepted`. */
export function expectedAfterWrap(s: Stream, accepted: number, ring: number): Uint8Array {
  const from = s.psbs.find((p) => p >= accepted - ring);
  assert.ok(from !== undefined && from + 16 <= accepted, "test stream needs a PSB inside the ring");
  return s.bytes.slice(from, accepted);
}

export interface Rig {
  msrs: MsrFile;
  memory: PhysMemory;
  unit: OutputUnit;
  pmis: PmiEvent[];
  start: OutputPointers;
}

const ENABLE: Partial<RtitCtl> = { traceEn: true, os: true, user: true, branchEn: true };

/** Program the output MSRs (through WRMSR), set TraceEn and enable the unit. */
export function rig(
  c: PtCapabilities,
  o: { toPA: boolean; base: number; mask?: number; index?: number; offset?: number; inject?: boolean },
  memory = new PhysMemory(),
  unitOptions: Omit<OutputUnitOptions, "onPmi"> = {},
): Rig & { enableError: ReturnType<OutputUnit["enable"]> } {
  const msrs = new MsrFile(c);
  assert.equal(msrs.writeMsr(Msr.OutputBase, BigInt(o.base)), null);
  const lo = o.toPA ? ((o.index ?? 0) << 7) | 0x7f : (o.mask ?? 0x7f);
  const h = encodeOutputMaskPtrs({
    lowerMask: 0x7f,
    maskOrTableOffset: lo >>> 7,
    outputOffset: o.offset ?? 0,
  });
  assert.equal(msrs.wrmsr(Msr.OutputMaskPtrs, h.hi, h.lo), null);
  const start = pointers(msrs);
  assert.equal(
    msrs.writeMsr(
      Msr.Ctl,
      encodeCtlBig({ ...ENABLE, toPA: o.toPA, injectPsbPmiOnEnable: o.inject ?? false }),
    ),
    null,
  );
  const pmis: PmiEvent[] = [];
  const unit = new OutputUnit(msrs, memory, { ...unitOptions, onPmi: (e) => pmis.push(e) });
  const enableError = unit.enable();
  return { msrs, memory, unit, pmis, start, enableError };
}

export const pointers = (m: MsrFile): OutputPointers => ({
  outputBase: (BigInt(m.outputBaseHi) << 32n) | BigInt(m.outputBaseLo),
  outputMaskPtrs: (BigInt(m.outputMaskHi) << 32n) | BigInt(m.outputMaskLo),
});

/** Write `bytes` in chunks of 1..maxChunk bytes; returns the total accepted. */
export function writeChunked(unit: OutputUnit, bytes: Uint8Array, seed: number, maxChunk = 300): number {
  const r = rng(seed);
  let pos = 0;
  let accepted = 0;
  while (pos < bytes.length) {
    const n = Math.min(bytes.length - pos, 1 + Math.floor(r() * maxChunk));
    const res = unit.write(bytes, pos, n);
    accepted += res.accepted;
    pos += n;
    if (res.accepted < n) break;
  }
  return accepted;
}

/** Stop tracing: TraceEn cleared through WRMSR after the unit flushed. */
export function stop(x: Rig): void {
  x.unit.disable();
  assert.equal(x.msrs.writeMsr(Msr.Ctl, 0n), null);
}

export const STATUS_TRIGGER_EN = 1 << 2;
export const STATUS_ERROR = 1 << 4;
export const STATUS_STOPPED = 1 << 5;
export const STATUS_PEND_TOPA_PMI = 1 << 7;

/**
 * Reading trace back out of memory: from the memory (or region dumps loaded into a
 * {@link PhysMemory}), the ToPA tables in it and the output MSRs after tracing, the
 * trace bytes in the order they were written.
 *
 * A buffer that did not wrap gives the bytes from the start position (the output MSRs
 * when tracing was enabled) to the final one. A buffer that wrapped gives the whole
 * ring, oldest byte first (from the final write pointer around to itself), starting at
 * the first whole PSB (older bytes cannot be decoded: a packet may have been cut by the
 * overwrite). Regions whose STOP entry filled, where the last packet may be cut, are
 * named.
 */
import { ErrorCode, PtError } from "../../base/errors.js";
import { syncForward } from "../../packet/sync.js";
import type { PtCapabilities } from "../capabilities.js";
import type { OutputErrorInfo } from "./errors.js";
import type { PhysMemory } from "./memory.js";
import { nextTopaIndex, resolveTopa, type TopaRegion, type TopaRules, topaRules } from "./topa.js";

/** IA32_RTIT_OUTPUT_BASE and IA32_RTIT_OUTPUT_MASK_PTRS as read with RDMSR. */
export interface OutputPointers {
  outputBase: bigint;
  outputMaskPtrs: bigint;
}

export interface ReadOutputOptions {
  memory: PhysMemory;
  caps: PtCapabilities;
  /** IA32_RTIT_CTL.ToPA of the traced run (false: single-range output). */
  toPA: boolean;
  /** The output MSRs after tracing (TraceEn cleared). */
  final: OutputPointers;
  /** The output MSRs when tracing was enabled. Default: entry 0 of the final table (ToPA) or offset 0, offset 0. */
  start?: OutputPointers;
  /**
   * Whether the buffer wrapped: the run wrote at least the ring's capacity, so the
   * oldest bytes were overwritten (going round past the ring's end without reaching the
   * start again is no wrap). Default: detected: it wrapped when the memory a run
   * without a wrap would not have written (from the final pointer round to the start)
   * holds a non-zero byte, or the final pointer is not reachable from the start. Pass
   * it when known: a ring filled exactly, or one whose unwritten part holds only PADs
   * (zeros), is ambiguous; so is memory that held data before the run.
   */
  wrapped?: boolean;
  /** Refuse to assemble more than this many bytes (default 1 GiB). */
  maxBytes?: number;
}

/** One contiguous piece of the returned trace. */
export interface OutputSegment {
  /** ToPA table and entry; single range: the output base and -1. */
  tableBase: number;
  index: number;
  regionBase: number;
  regionSize: number;
  /** Byte range [from, to) inside the region. */
  from: number;
  to: number;
  /** Where the piece starts in the returned bytes. */
  traceOffset: number;
  /** The entry's STOP and INT bits (false for single range). */
  stop: boolean;
  int: boolean;
}

export interface ReadOutputResult {
  /** The trace bytes, oldest first. */
  bytes: Uint8Array;
  wrapped: boolean;
  /** Bytes of the wrapped ring skipped before the first whole PSB (all of them when there is none). */
  skipped: number;
  /** Whether a wrapped ring held no whole PSB (then `bytes` is empty). */
  noSync: boolean;
  /** Where each piece of `bytes` came from. */
  segments: OutputSegment[];
  /** STOP regions that were filled: output ceased at their last byte, cutting the packet there. */
  cutByStop: OutputSegment[];
}

interface Pos {
  tableBase: number;
  index: number;
  offset: number;
}

const unpackBase = (v: bigint): number => Number(v & 0xffff_ffff_ffff_ff80n);
const unpackIndex = (v: bigint): number => Number((v >> 7n) & 0x1ffffffn);
const unpackOffset = (v: bigint): number => Number((v >> 32n) & 0xffffffffn);

const bad = (detail: string): PtError => new PtError(ErrorCode.BadConfig, 0, undefined, detail);

/** Read the trace written to memory; see the module comment. Throws PtError(BadConfig) on inconsistent input. */
export function readOutput(o: ReadOutputOptions): ReadOutputResult {
  const maxBytes = o.maxBytes ?? 2 ** 30;
  const raw = o.toPA ? topaSegments(o, maxBytes) : singleRangeSegments(o);
  let total = 0;
  for (const s of raw.segments) {
    s.traceOffset = total;
    total += s.to - s.from;
  }
  if (total > maxBytes) throw bad(`trace of ${total} bytes exceeds maxBytes ${maxBytes}`);
  const all = new Uint8Array(total);
  for (const s of raw.segments) o.memory.readInto(s.regionBase + s.from, s.to - s.from, all, s.traceOffset);
  const cutByStop = raw.segments.filter((s) => s.stop && s.to === s.regionSize);
  if (!raw.wrapped) {
    return { bytes: all, wrapped: false, skipped: 0, noSync: false, segments: raw.segments, cutByStop };
  }
  const psb = syncForward(all, 0);
  const skipped = psb < 0 ? total : psb;
  return {
    bytes: all.slice(skipped),
    wrapped: true,
    skipped,
    noSync: psb < 0,
    segments: trimSegments(raw.segments, skipped),
    cutByStop,
  };
}

function trimSegments(segments: OutputSegment[], skip: number): OutputSegment[] {
  const out: OutputSegment[] = [];
  for (const s of segments) {
    const len = s.to - s.from;
    if (s.traceOffset + len <= skip) continue;
    const cut = Math.max(0, skip - s.traceOffset);
    out.push({ ...s, from: s.from + cut, traceOffset: s.traceOffset + cut - skip });
  }
  return out;
}

// Single range.

function singleRangeSegments(o: ReadOutputOptions): { segments: OutputSegment[]; wrapped: boolean } {
  const mask = Number(o.final.outputMaskPtrs & 0xffffffffn) >>> 0;
  if (((mask + 1) & mask) !== 0) throw bad(`single-range mask 0x${mask.toString(16)} is not contiguous`);
  const size = mask + 1;
  const base = Number(o.final.outputBase - (o.final.outputBase % BigInt(size)));
  const fin = unpackOffset(o.final.outputMaskPtrs);
  const st = o.start ? unpackOffset(o.start.outputMaskPtrs) : 0;
  if (fin > mask || st > mask) throw bad("single-range OutputOffset beyond the mask");
  const seg = (from: number, to: number): OutputSegment => ({
    tableBase: base,
    index: -1,
    regionBase: base,
    regionSize: size,
    from,
    to,
    traceOffset: 0,
    stop: false,
    int: false,
  });
  let wrapped = o.wrapped;
  if (wrapped === undefined) {
    if (fin === st) wrapped = o.memory.anyNonZero(base, size);
    else if (fin < st) wrapped = o.memory.anyNonZero(base + fin, st - fin);
    else wrapped = o.memory.anyNonZero(base + fin, size - fin) || o.memory.anyNonZero(base, st);
  }
  if (!wrapped) {
    if (fin >= st) return { segments: fin > st ? [seg(st, fin)] : [], wrapped: false };
    return { segments: [seg(st, size), ...(fin > 0 ? [seg(0, fin)] : [])], wrapped: false };
  }
  const segments: OutputSegment[] = [];
  if (fin < size) segments.push(seg(fin, size));
  if (fin > 0) segments.push(seg(0, fin));
  return { segments, wrapped: true };
}

// ToPA.

class TopaWalker {
  private readonly rules: TopaRules;
  constructor(
    private readonly memory: PhysMemory,
    caps: PtCapabilities,
    private readonly maxBytes: number,
  ) {
    this.rules = topaRules(caps);
  }

  /** The region at a position (END followed), or the error there. */
  resolve(tableBase: number, index: number): { region: TopaRegion; error: OutputErrorInfo | null } {
    const region: TopaRegion = { tableBase, index, regionBase: 0, regionSize: 0, int: false, stop: false };
    const error = resolveTopa(this.memory, this.rules, tableBase, index, region);
    return { region, error };
  }

  /**
   * Segments from `a` forward to `b` (both resolved positions), or null when `b` is
   * not reached before an entry repeats or an erroneous entry other than `b` is met.
   * When `b` is in `a`'s entry but behind it, the walk goes round the ring to it;
   * "ring" always goes round, also when `a` equals `b`.
   */
  walk(a: Pos, b: Pos, mode: "to" | "ring"): OutputSegment[] | null {
    const segs: OutputSegment[] = [];
    const seen = new Set<string>();
    let bytes = 0;
    let cur = this.resolve(a.tableBase, a.index);
    let off = a.offset;
    let first = true;
    for (;;) {
      const here = cur.error ? { tableBase: cur.error.tableBase, index: cur.error.index } : cur.region;
      const atB = here.tableBase === b.tableBase && here.index === b.index;
      if (atB && !(first && (mode === "ring" || b.offset < off))) {
        if (cur.error) return segs;
        if (b.offset > off) segs.push(segment(cur.region, off, b.offset));
        return segs;
      }
      if (cur.error) return null;
      const key = `${here.tableBase}:${here.index}`;
      if (seen.has(key)) return null;
      seen.add(key);
      const r = cur.region;
      if (r.regionSize > off) segs.push(segment(r, off, r.regionSize));
      bytes += r.regionSize - off;
      if (bytes > this.maxBytes) {
        throw bad(
          `ToPA walk exceeds maxBytes ${this.maxBytes} (pass \`wrapped\` to avoid walking the whole ring)`,
        );
      }
      off = 0;
      first = false;
      cur = this.resolve(r.tableBase, nextTopaIndex(r.index));
    }
  }
}

function segment(r: TopaRegion, from: number, to: number): OutputSegment {
  return {
    tableBase: r.tableBase,
    index: r.index,
    regionBase: r.regionBase,
    regionSize: r.regionSize,
    from,
    to,
    traceOffset: 0,
    stop: r.stop,
    int: r.int,
  };
}

function topaSegments(
  o: ReadOutputOptions,
  maxBytes: number,
): { segments: OutputSegment[]; wrapped: boolean } {
  const w = new TopaWalker(o.memory, o.caps, maxBytes);
  const finTable = unpackBase(o.final.outputBase);
  const fin = w.resolve(finTable, unpackIndex(o.final.outputMaskPtrs));
  const finPos: Pos = fin.error
    ? { tableBase: fin.error.tableBase, index: fin.error.index, offset: 0 }
    : {
        tableBase: fin.region.tableBase,
        index: fin.region.index,
        offset: unpackOffset(o.final.outputMaskPtrs),
      };
  if (!fin.error && finPos.offset > fin.region.regionSize) throw bad("final OutputOffset beyond its region");
  let startPos: Pos = { tableBase: finTable, index: 0, offset: 0 };
  if (o.start) {
    const s = w.resolve(unpackBase(o.start.outputBase), unpackIndex(o.start.outputMaskPtrs));
    if (s.error) throw bad(`start entry: ${s.error.reason}`);
    startPos = {
      tableBase: s.region.tableBase,
      index: s.region.index,
      offset: unpackOffset(o.start.outputMaskPtrs),
    };
  } else {
    const s = w.resolve(finTable, 0);
    if (!s.error) startPos = { tableBase: s.region.tableBase, index: s.region.index, offset: 0 };
  }
  // The ring through the final pointer (null: the chain from it does not come back);
  // walked only when needed, as a ring can be far larger than what a run wrote.
  let ringCache: OutputSegment[] | null | undefined;
  const ring = (): OutputSegment[] | null => {
    if (ringCache === undefined) ringCache = fin.error ? null : w.walk(finPos, finPos, "ring");
    return ringCache;
  };
  let wrapped = o.wrapped;
  let forward: OutputSegment[] | null = null;
  if (wrapped !== false) forward = w.walk(startPos, finPos, "to");
  if (wrapped === undefined) {
    if (forward === null) wrapped = true;
    else if (ring() === null) wrapped = false;
    else {
      const ringSegs = ring() ?? [];
      // Where the run entered the ring the final pointer is on (the start itself, or
      // the first ring entry after a lead-in of tables outside it): without a wrap,
      // nothing was written from the final pointer round to there.
      const key = (t: number, i: number): string => `${t}:${i}`;
      const inRing = new Set(ringSegs.map((g) => key(g.tableBase, g.index)));
      let entry: Pos = finPos;
      if (inRing.has(key(startPos.tableBase, startPos.index))) entry = startPos;
      else {
        const g = forward.find((f) => inRing.has(key(f.tableBase, f.index)));
        if (g) entry = { tableBase: g.tableBase, index: g.index, offset: g.from };
      }
      const whole =
        entry.tableBase === finPos.tableBase &&
        entry.index === finPos.index &&
        entry.offset === finPos.offset;
      const unwritten = whole ? ringSegs : w.walk(finPos, entry, "to");
      wrapped = unwritten?.some((g) => o.memory.anyNonZero(g.regionBase + g.from, g.to - g.from)) ?? false;
    }
  }
  if (!wrapped) {
    forward ??= w.walk(startPos, finPos, "to");
    if (forward === null)
      throw bad("the final output pointer cannot be reached from the start without a wrap");
    return { segments: forward, wrapped: false };
  }
  const ringSegs = ring();
  if (ringSegs === null)
    throw bad("the output does not form a ring from the final pointer, so it cannot have wrapped");
  return { segments: ringSegs, wrapped: true };
}

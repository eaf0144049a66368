/**
 * ToPA table entries (SDM Vol. 3C Figure 33-2, Table 33-3) and the walk from one
 * output region to the next, with the checks the processor makes when an entry is
 * reached ("ToPA Errors").
 *
 * Entry layout: bit 0 END, bit 2 INT, bit 4 STOP, bits 9:6 Size, bits MAXPHYADDR-1:12
 * the output region base (END=0) or the next table's base (END=1); bits 1, 3, 5, 11:10
 * and 63:MAXPHYADDR are reserved.
 */
import { lowMask } from "../bits.js";
import type { PtCapabilities } from "../capabilities.js";
import { physAddrReservedHi } from "../msr.js";
import { OutputError, type OutputErrorInfo } from "./errors.js";
import type { PhysMemory } from "./memory.js";

export const TOPA_END = 1 << 0;
export const TOPA_INT = 1 << 2;
export const TOPA_STOP = 1 << 4;
/** Bits 1, 3, 5, 11:10. */
export const TOPA_RESERVED_LO = 0xc2a;
/** The highest entry index: proc_trace_table_offset = 0FFFFFF8H. */
export const TOPA_MAX_INDEX = 0x1ffffff;
const TWO32 = 2 ** 32;

/** A ToPA entry as software writes it. */
export interface TopaEntry {
  /** Output region base (END=0) or next table base (END=1); 4 KiB aligned. */
  base: number;
  /** Size encoding 0..15: 4K << size. Ignored when END=1. */
  size?: number;
  end?: boolean;
  int?: boolean;
  stop?: boolean;
  /** Extra raw bits for the low half (tests of reserved bits). */
  rawLo?: number;
  /** Extra raw bits for the high half (tests of bits above MAXPHYADDR). */
  rawHi?: number;
}

/** Region size in bytes for a Size encoding (0: 4K ... 15: 128M). */
export const topaRegionSize = (size: number): number => PAGE_4K * 2 ** (size & 15);
const PAGE_4K = 4096;

/** Encode an entry into halves. Throws RangeError on a base that is not 4 KiB aligned or too large. */
export function encodeTopaEntry(e: TopaEntry): { hi: number; lo: number } {
  if (!Number.isSafeInteger(e.base) || e.base < 0 || e.base % PAGE_4K !== 0 || e.base >= 2 ** 52) {
    throw new RangeError(`ToPA entry base ${e.base} is not a 4 KiB aligned address below 2^52`);
  }
  const size = e.size ?? 0;
  if (!Number.isInteger(size) || size < 0 || size > 15)
    throw new RangeError(`ToPA Size ${size} is not 0..15`);
  const lo =
    ((e.base % TWO32) |
      (e.end ? TOPA_END : 0) |
      (e.int ? TOPA_INT : 0) |
      (e.stop ? TOPA_STOP : 0) |
      (size << 6) |
      (e.rawLo ?? 0)) >>>
    0;
  const hi = (Math.floor(e.base / TWO32) | (e.rawHi ?? 0)) >>> 0;
  return { hi, lo };
}

/** Write a table of entries at `tableBase` (entry i at tableBase + 8i). */
export function writeTopaTable(memory: PhysMemory, tableBase: number, entries: readonly TopaEntry[]): void {
  entries.forEach((e, i) => {
    const { hi, lo } = encodeTopaEntry(e);
    memory.writeU64(tableBase + 8 * i, hi, lo);
  });
}

/** Read the entry at `tableBase + 8 * index`. */
export function readTopaEntry(memory: PhysMemory, tableBase: number, index: number): TopaEntry {
  const lo = memory.readU32(tableBase + 8 * index);
  const hi = memory.readU32(tableBase + 8 * index + 4);
  return {
    base: hi * TWO32 + ((lo & ~0xfff) >>> 0),
    size: (lo >>> 6) & 15,
    end: (lo & TOPA_END) !== 0,
    int: (lo & TOPA_INT) !== 0,
    stop: (lo & TOPA_STOP) !== 0,
    rawLo: lo & TOPA_RESERVED_LO,
  };
}

/** The output entry a walk arrived at. */
export interface TopaRegion {
  tableBase: number;
  index: number;
  regionBase: number;
  regionSize: number;
  int: boolean;
  stop: boolean;
}

/** The rules an entry is checked against (from CPUID). */
export interface TopaRules {
  readonly multipleEntries: boolean;
  readonly maxPhysAddr: number;
}

export const topaRules = (caps: PtCapabilities): TopaRules => ({
  multipleEntries: caps.topaMultipleEntries,
  maxPhysAddr: caps.maxPhysAddr,
});

/** Entries this walk follows before giving up on END chains (each END must lead to an entry 0). */
const MAX_END_HOPS = 2;

/**
 * Resolve the entry at (`tableBase`, `index`) to an output region, following an END
 * entry to the next table's entry 0. Fills `out` and returns null, or returns the
 * error; then `out.tableBase`/`out.index` locate the offending entry.
 */
export function resolveTopa(
  memory: PhysMemory,
  rules: TopaRules,
  tableBase: number,
  index: number,
  out: TopaRegion,
): OutputErrorInfo | null {
  const aboveHi = physAddrReservedHi(rules.maxPhysAddr);
  const aboveLo = rules.maxPhysAddr < 32 ? ~lowMask(rules.maxPhysAddr) >>> 0 : 0;
  let tb = tableBase;
  let ix = index;
  for (let hop = 0; hop <= MAX_END_HOPS; hop++) {
    out.tableBase = tb;
    out.index = ix;
    const err = (kind: OutputError, reason: string): OutputErrorInfo => ({
      kind,
      tableBase: tb,
      index: ix,
      reason,
    });
    if (!rules.multipleEntries && ix >= 2) {
      return err(
        OutputError.SingleEntryNeedsEnd,
        `entry ${ix}: a single-entry ToPA has only entries 0 and 1`,
      );
    }
    const addr = tb + 8 * ix;
    const lo = memory.readU32(addr);
    const hi = memory.readU32(addr + 4);
    if ((lo & TOPA_RESERVED_LO) !== 0) {
      return err(OutputError.EntryReserved, `entry ${ix}: reserved bits set (${hex(lo & TOPA_RESERVED_LO)})`);
    }
    if ((hi & aboveHi) !== 0 || (lo & aboveLo) !== 0) {
      return err(
        OutputError.EntryAboveMaxPhysAddr,
        `entry ${ix}: address bits at or above MAXPHYADDR = ${rules.maxPhysAddr} set`,
      );
    }
    const base = hi * TWO32 + ((lo & ~0xfff) >>> 0);
    if ((lo & TOPA_END) !== 0) {
      if ((lo & (TOPA_INT | TOPA_STOP)) !== 0) {
        return err(OutputError.EndWithIntOrStop, `entry ${ix}: END=1 with INT or STOP set`);
      }
      if (ix === 0) return err(OutputError.EndInEntry0, `entry 0 of table ${hex(tb)} has END=1`);
      if (!rules.multipleEntries && base !== tb) {
        return err(
          OutputError.SingleEntryEndBase,
          `entry ${ix}: END points to ${hex(base)}, not to the table base ${hex(tb)} (single-entry ToPA)`,
        );
      }
      tb = base;
      ix = 0;
      continue;
    }
    if (!rules.multipleEntries && ix !== 0) {
      return err(OutputError.SingleEntryNeedsEnd, `entry ${ix}: a single-entry ToPA needs END=1 here`);
    }
    const sizeEnc = (lo >>> 6) & 15;
    const size = topaRegionSize(sizeEnc);
    if (base % size !== 0) {
      return err(
        OutputError.RegionMisaligned,
        `entry ${ix}: base ${hex(base)} is not aligned to its size ${hex(size)}`,
      );
    }
    out.regionBase = base;
    out.regionSize = size;
    out.int = (lo & TOPA_INT) !== 0;
    out.stop = (lo & TOPA_STOP) !== 0;
    return null;
  }
  // Unreachable: an END always leads to entry 0, where END is itself an error.
  return { kind: OutputError.EndInEntry0, tableBase: tb, index: ix, reason: "END chain" };
}

/** The index after `index`: the maximum table size wraps back to entry 0 of the same table. */
export const nextTopaIndex = (index: number): number => (index >= TOPA_MAX_INDEX ? 0 : index + 1);

export const hex = (v: number): string => `0x${v.toString(16)}`;

/**
 * A decode cache keyed by (address space, IP, mode): each instruction is decoded once
 * and every later lookup is a few typed-array reads.
 *
 * Layout: a set-associative table (4 ways per set) over parallel typed arrays, so a
 * lookup hashes the key to one set and compares at most four entries; nothing is
 * allocated per lookup and memory is fixed at construction (32 bytes per entry).
 * A full set evicts its least recently used entry. Failed decodes (`BadInsn`) are
 * cached too, so that garbage is not decoded again and again.
 *
 * The cache trusts that the bytes at a cached (address space, IP) do not change: call
 * {@link InsnCache.invalidate} for self-modifying, patched or relocated code and
 * {@link InsnCache.invalidateAsid} when an address space goes away.
 */
import { ErrorCode } from "../base/errors.js";
import { decodeInsn, MAX_INSN_LENGTH } from "./decode.js";
import type { ExecMode, InsnClass, InsnInfo } from "./types.js";

/** Pass as the address space to {@link InsnCache.invalidate} to cover every address space. */
export const ANY_ASID = -1;

export interface InsnCacheOptions {
  /** Most entries kept (rounded up to a power of two, at least 64). Default 65536. */
  maxEntries?: number;
}

export interface InsnCacheStats {
  /** Lookups answered from the cache. */
  hits: number;
  /** Lookups that had to decode (or, for {@link InsnCache.probe}, found nothing). */
  misses: number;
  /** Entries dropped to make room. */
  evictions: number;
  /** Entries dropped by invalidate/invalidateAsid/clear. */
  invalidations: number;
  /** Entries held now. */
  entries: number;
  /** Most entries the cache holds. */
  capacity: number;
  /** Bytes of typed arrays the cache holds. */
  bytes: number;
}

const WAYS = 4;
/** Words (Uint32) per entry: asid, ip hi, ip lo, meta, target hi, target lo, LRU stamp, unused. */
const STRIDE = 8;
const ASID = 0;
const IP_HI = 1;
const IP_LO = 2;
const META = 3;
const TGT_HI = 4;
const TGT_LO = 5;
const STAMP = 6;
const BYTES_PER_ENTRY = STRIDE * 4;
const DEFAULT_ENTRIES = 1 << 16;
const MIN_ENTRIES = 64;
const TWO_32 = 4294967296;

/*
 * META: 0 for an empty entry, else
 *   bit 0 valid, bits 1-2 mode, bits 3-6 length (0: the decode failed with BadInsn),
 *   bits 7-11 class, bits 12-15 flags.
 */
const META_VALID = 1;

export class InsnCache {
  /** Most entries the cache holds. */
  readonly capacity: number;
  private readonly shift: number;
  /**
   * Every entry's words side by side, so that one lookup touches one set: 4 entries
   * of 32 bytes, two cache lines.
   */
  private readonly table: Uint32Array;
  private clock = 0;
  private size = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;
  private invalidations = 0;

  constructor(options: InsnCacheOptions = {}) {
    const want = Math.max(MIN_ENTRIES, Math.min(options.maxEntries ?? DEFAULT_ENTRIES, 1 << 26));
    let entries = MIN_ENTRIES;
    while (entries < want) entries *= 2;
    this.capacity = entries;
    this.shift = 32 - Math.log2(entries / WAYS);
    this.table = new Uint32Array(entries * STRIDE);
  }

  /** Word index of the first entry of the set that (asid, ip) maps to. */
  private setBase(asid: number, ipHi: number, ipLo: number): number {
    const h = ipLo ^ Math.imul(ipHi ^ Math.imul(asid, 0x85ebca6b), 0xc2b2ae35);
    return (Math.imul(h, 0x9e3779b1) >>> this.shift) * (WAYS * STRIDE);
  }

  /** Word index of the entry holding (asid, ip, mode), or -1. Arguments are already unsigned. */
  private find(asid: number, ipHi: number, ipLo: number, mode: number): number {
    const t = this.table;
    const base = this.setBase(asid, ipHi, ipLo);
    const want = META_VALID | (mode << 1);
    for (let e = base; e < base + WAYS * STRIDE; e += STRIDE) {
      if (
        t[e + IP_LO] === ipLo &&
        (t[e + META]! & 7) === want &&
        t[e + IP_HI] === ipHi &&
        t[e + ASID] === asid
      ) {
        return e;
      }
    }
    return -1;
  }

  private touch(e: number): void {
    let c = this.clock + 1;
    if (c > 0xfffffffe) {
      for (let i = STAMP; i < this.table.length; i += STRIDE) this.table[i] = 0;
      c = 1;
    }
    this.clock = c;
    this.table[e + STAMP] = c;
  }

  /** Copy entry `e` into `out`; the lookup's result. */
  private read(e: number, out: InsnInfo): number {
    const t = this.table;
    const m = t[e + META]!;
    const length = (m >>> 3) & 15;
    if (length === 0) {
      out.clear();
      return -ErrorCode.BadInsn;
    }
    out.length = length;
    out.iclass = ((m >>> 7) & 31) as InsnClass;
    out.flags = (m >>> 12) & 15;
    out.targetHi = t[e + TGT_HI]!;
    out.targetLo = t[e + TGT_LO]!;
    return length;
  }

  /**
   * The instruction at IP `ipHi:ipLo` of address space `asid` in `mode`, into `out`.
   * On a miss it is decoded from `bytes[offset]` (the code bytes at that IP, as for
   * {@link decodeInsn}) and kept; on a hit `bytes` is not read.
   *
   * @param asid the caller's number for the address space (unsigned 32-bit; for
   *   example an index per CR3 or per process image).
   * @returns as {@link decodeInsn}: the length, `-ErrorCode.BadInsn` (cached too) or
   *   `-ErrorCode.Invalid` (bad mode or offset; not cached).
   */
  lookup(
    asid: number,
    ipHi: number,
    ipLo: number,
    mode: ExecMode,
    bytes: Uint8Array,
    offset: number,
    out: InsnInfo,
  ): number {
    asid >>>= 0;
    ipHi >>>= 0;
    ipLo >>>= 0;
    const hit = this.find(asid, ipHi, ipLo, mode);
    if (hit >= 0) {
      this.hits++;
      this.touch(hit);
      return this.read(hit, out);
    }
    this.misses++;
    const status = decodeInsn(bytes, offset, ipHi, ipLo, mode, out);
    if (status === -ErrorCode.Invalid) return status;
    this.store(asid, ipHi, ipLo, mode, status, out);
    return status;
  }

  /**
   * A lookup that never decodes: the length (or `-ErrorCode.BadInsn`) of a cached
   * instruction, filling `out`, or 0 when (asid, ip, mode) is not cached.
   */
  probe(asid: number, ipHi: number, ipLo: number, mode: ExecMode, out: InsnInfo): number {
    const hit = this.find(asid >>> 0, ipHi >>> 0, ipLo >>> 0, mode);
    if (hit < 0) {
      this.misses++;
      return 0;
    }
    this.hits++;
    this.touch(hit);
    return this.read(hit, out);
  }

  private store(
    asid: number,
    ipHi: number,
    ipLo: number,
    mode: number,
    status: number,
    info: InsnInfo,
  ): void {
    const t = this.table;
    const base = this.setBase(asid, ipHi, ipLo);
    let victim = base;
    for (let e = base; e < base + WAYS * STRIDE; e += STRIDE) {
      if (t[e + META] === 0) {
        victim = e;
        break;
      }
      if (t[e + STAMP]! < t[victim + STAMP]!) victim = e;
    }
    if (t[victim + META] === 0) this.size++;
    else this.evictions++;
    t[victim + ASID] = asid;
    t[victim + IP_HI] = ipHi;
    t[victim + IP_LO] = ipLo;
    if (status > 0) {
      t[victim + META] = META_VALID | (mode << 1) | (status << 3) | (info.iclass << 7) | (info.flags << 12);
      t[victim + TGT_HI] = info.targetHi;
      t[victim + TGT_LO] = info.targetLo;
    } else {
      t[victim + META] = META_VALID | (mode << 1);
      t[victim + TGT_HI] = 0;
      t[victim + TGT_LO] = 0;
    }
    this.touch(victim);
  }

  /**
   * Drop every cached instruction of address space `asid` ({@link ANY_ASID}: of all)
   * whose bytes overlap [from, to): instructions that start before `from` but reach
   * into the range included. Failed decodes count as 15 bytes long, since more bytes
   * could make them valid. Returns the number of entries dropped.
   */
  invalidate(asid: number, fromHi: number, fromLo: number, toHi: number, toLo: number): number {
    const any = asid === ANY_ASID;
    asid >>>= 0;
    fromHi >>>= 0;
    fromLo >>>= 0;
    toHi >>>= 0;
    toLo >>>= 0;
    if (toHi < fromHi || (toHi === fromHi && toLo <= fromLo)) return 0;
    const t = this.table;
    let dropped = 0;
    for (let e = 0; e < t.length; e += STRIDE) {
      const m = t[e + META]!;
      if (m === 0 || (!any && t[e + ASID] !== asid)) continue;
      const hi = t[e + IP_HI]!;
      const lo = t[e + IP_LO]!;
      // start < to
      if (hi > toHi || (hi === toHi && lo >= toLo)) continue;
      // end = start + span > from (end may reach 2^64: hi then is 2^32, still exact)
      const span = (m >>> 3) & 15 || MAX_INSN_LENGTH;
      let endLo = lo + span;
      let endHi = hi;
      if (endLo >= TWO_32) {
        endLo -= TWO_32;
        endHi += 1;
      }
      if (endHi < fromHi || (endHi === fromHi && endLo <= fromLo)) continue;
      t[e + META] = 0;
      dropped++;
    }
    this.size -= dropped;
    this.invalidations += dropped;
    return dropped;
  }

  /** Drop every cached instruction of address space `asid`. Returns the number dropped. */
  invalidateAsid(asid: number): number {
    asid >>>= 0;
    const t = this.table;
    let dropped = 0;
    for (let e = 0; e < t.length; e += STRIDE) {
      if (t[e + META] !== 0 && t[e + ASID] === asid) {
        t[e + META] = 0;
        dropped++;
      }
    }
    this.size -= dropped;
    this.invalidations += dropped;
    return dropped;
  }

  /** Drop everything (statistics other than `invalidations` are kept). */
  clear(): void {
    this.table.fill(0);
    this.clock = 0;
    this.invalidations += this.size;
    this.size = 0;
  }

  stats(): InsnCacheStats {
    return {
      hits: this.hits,
      misses: this.misses,
      evictions: this.evictions,
      invalidations: this.invalidations,
      entries: this.size,
      capacity: this.capacity,
      bytes: this.capacity * BYTES_PER_ENTRY,
    };
  }

  resetStats(): void {
    this.hits = 0;
    this.misses = 0;
    this.evictions = 0;
    this.invalidations = 0;
  }
}

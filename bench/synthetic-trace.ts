/**
 * A deterministic synthetic Intel PT trace for the packet-decode benchmark.
 *
 * The stream imitates a `perf record -e intel_pt//` capture of a busy process on a
 * kernel+user trace: about 40% of the bytes are TNT (mostly TNT-8, some TNT-64),
 * about 50% are TIP-family packets (TIP, FUP, TIP.PGE, TIP.PGD) over every IP
 * compression (update-16/32/48, sext-48, full, suppressed) with user addresses from
 * 0x400000 up to 0x7fff_xxxx_xxxx and kernel addresses at 0xffffffff81xxxxxx, and
 * the rest is a PSB+ every 4 KiB (PSB, TSC, TMA, CBR, PIP, MODE.Exec, FUP, PSBEND,
 * as real hardware emits it), sprinkled MTC/CYC/TSC/CBR, PAD runs and the odd
 * PIP/MODE. Every byte comes out of ptkit's own {@link PacketEncoder}; this module
 * only decides which packets to emit.
 *
 * Same seed and size, same bytes. Traces are cached under bench/.cache/.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PacketEncoder } from "../src/packet/encode.js";
import { Flag, Ipc, Packet, PacketType } from "../src/packet/index.js";
import { CACHE_DIR } from "./paths.js";
import { Rng } from "./prng.js";

/** Bump when the generated stream changes, so that stale caches are regenerated. */
export const GENERATOR_VERSION = 1;

export const DEFAULT_SEED = 1;
export const DEFAULT_SIZE = 128 * 1024 * 1024;

/** Hardware PSB frequency: a PSB+ after every 4 KiB of trace. */
const PSB_PERIOD = 4096;

/** Target share of the bytes for the groups the generator steers. */
const TARGET_TNT = 0.4;
const TARGET_IP = 0.5;
const TARGET_TIMING = 0.055;
const TARGET_PAD = 0.015;

const G_TNT = 0;
const G_IP = 1;
const G_TIMING = 2;
const G_PAD = 3;
const GROUP_TARGETS = [TARGET_TNT, TARGET_IP, TARGET_TIMING, TARGET_PAD];
/** Rough bytes per event of each group, before any have been seen. */
const PRIOR_EVENT_BYTES = [1.3, 4.5, 2.5, 8];

/** A code region: `size` bytes from (hi:lo). Bases are 64 KiB aligned, nothing crosses 4 GiB. */
interface Region {
  hi: number;
  lo: number;
  size: number;
}

export interface GenerateOptions {
  seed?: number;
  /** Exact output size in bytes. */
  size?: number;
}

class Generator {
  private readonly rng: Rng;
  private readonly enc = new PacketEncoder();
  private readonly pkt = new Packet();
  private readonly user: Region[];
  private readonly kernel: Region[];
  private readonly kernelEntries: number[];

  // Architectural state.
  private region: Region;
  private ipHi: number;
  private ipLo: number;
  private inKernel = false;
  private savedRegion: Region;
  private savedLo = 0;
  private savedHi = 0;
  private cr3: number;
  private tscLo: number;
  private tscHi = 0x1234;
  private ctc = 0;
  private cbr = 32;

  // Steering: bytes and events so far per group, and where the next PSB goes.
  private readonly groupBytes = new Float64Array(4);
  private readonly groupEvents = new Float64Array(4);
  private readonly weights = new Float64Array(4);
  private nextPsb = 0;

  constructor(seed: number) {
    this.rng = new Rng(seed);
    const r = this.rng;
    // The non-PIE main binary at 0x400000, then shared libraries and the vDSO high up.
    this.user = [{ hi: 0, lo: 0x400000, size: 0x200000 }];
    for (let i = 0; i < 6; i++) {
      this.user.push({
        hi: 0x7f00 + r.below(0xfe),
        lo: r.below(0xf000) << 16,
        size: (16 + r.below(48)) << 16,
      });
    }
    this.user.push({ hi: 0x7ffd + r.below(2), lo: r.below(0xffe0) << 16, size: 0x20000 });
    // vmlinux text at 0xffffffff81000000 and two modules at 0xffffffffc0xxxxxx.
    this.kernel = [
      { hi: 0xffffffff, lo: 0x81000000, size: 0x1000000 },
      { hi: 0xffffffff, lo: 0xc0000000 + (r.below(0x40) << 16), size: 0x40000 },
      { hi: 0xffffffff, lo: 0xc0800000 + (r.below(0x40) << 16), size: 0x40000 },
    ];
    // A handful of entry points (syscall entry, interrupt stubs, page fault...).
    this.kernelEntries = [];
    for (let i = 0; i < 8; i++) this.kernelEntries.push(0x81000000 + (r.below(0x100000) << 4));
    this.region = this.user[0]!;
    this.savedRegion = this.region;
    this.ipHi = 0;
    this.ipLo = this.region.lo + 0x1000;
    this.cr3 = r.below(0x100000) << 12;
    this.tscLo = r.u32();
  }

  private get length(): number {
    return this.enc.length;
  }

  generate(size: number): Uint8Array {
    // Stop the main loop with room for the largest event; PADs fill the rest exactly.
    const stop = size - 256;
    while (this.length < stop) {
      if (this.length >= this.nextPsb) {
        this.psbPlus();
        this.nextPsb = (Math.floor(this.length / PSB_PERIOD) + 1) * PSB_PERIOD;
        continue;
      }
      // Pick the event's group with probability proportional to its byte target over its
      // mean event size, nudged by how far its byte share lags or leads the target.
      const steered = this.groupBytes[0]! + this.groupBytes[1]! + this.groupBytes[2]! + this.groupBytes[3]!;
      for (let g = 0; g < 4; g++) {
        const target = GROUP_TARGETS[g]!;
        const meanSize = (this.groupBytes[g]! + PRIOR_EVENT_BYTES[g]!) / (this.groupEvents[g]! + 1);
        const lag = (target * (steered + 4096)) / (this.groupBytes[g]! + target * 4096);
        this.weights[g] = (target / meanSize) * Math.min(4, Math.max(0.25, lag));
      }
      const g = this.rng.pick(this.weights);
      const before = this.length;
      switch (g) {
        case G_TNT:
          this.tnt();
          break;
        case G_IP:
          this.ipEvent();
          break;
        case G_TIMING:
          this.timing();
          break;
        case G_PAD:
          this.padRun();
      }
      this.groupBytes[g]! += this.length - before;
      this.groupEvents[g]!++;
    }
    while (this.length < size) this.emitSimple(PacketType.Pad);
    const bytes = this.enc.bytes();
    if (bytes.length !== size) throw new Error(`generated ${bytes.length} bytes, wanted ${size}`);
    return bytes;
  }

  // --- packets -------------------------------------------------------------------

  /** Every packet goes through here: the encoder rejects fields it can't encode. */
  private check(size: number): void {
    if (size < 0) throw new Error(`encoder rejected a packet at offset ${this.length} (error ${size})`);
  }

  private emitSimple(type: PacketType, a = 0, b = 0, flags = 0): void {
    const pkt = this.pkt.clear();
    pkt.type = type;
    pkt.a = a;
    pkt.b = b;
    pkt.flags = flags;
    this.check(this.enc.emit(pkt));
  }

  private emitPayload(type: PacketType, hi: number, lo: number, a = 0, flags = 0): void {
    const pkt = this.pkt.clear();
    pkt.type = type;
    pkt.hi = hi >>> 0;
    pkt.lo = lo >>> 0;
    pkt.a = a;
    pkt.flags = flags;
    this.check(this.enc.emit(pkt));
  }

  /** An IP packet to the current IP: usually the shortest compression, sometimes a forced one. */
  private emitIp(type: PacketType): void {
    const r = this.rng.u32() / 0x100000000;
    if (r < 0.02) {
      // Full 64-bit IP, as newer cores and some PSB+ FUPs emit.
      this.emitPayload(type, this.ipHi, this.ipLo, Ipc.Full);
    } else if (r < 0.035 && this.enc.last.have && this.enc.last.hi >>> 16 === this.ipHi >>> 16) {
      // Update-48 where the encoder picks sext-48 or update-32 (legal, just not the shortest/preferred).
      this.emitPayload(type, this.ipHi & 0xffff, this.ipLo, Ipc.Update48);
    } else {
      this.check(this.enc.emitIp(type, this.ipHi, this.ipLo));
    }
  }

  private psbPlus(): void {
    this.emitSimple(PacketType.Psb);
    this.advanceTsc(this.rng.range(200, 4000));
    this.emitPayload(PacketType.Tsc, this.tscHi, this.tscLo);
    this.emitSimple(PacketType.Tma, this.ctc & 0xffff, this.rng.below(0x200));
    this.emitSimple(PacketType.Cbr, this.cbr);
    this.emitPayload(PacketType.Pip, 0, this.cr3);
    this.emitSimple(PacketType.ModeExec, 0, 0, Flag.CsL);
    this.emitIp(PacketType.Fup);
    this.emitSimple(PacketType.PsbEnd);
  }

  private tnt(): void {
    const r = this.rng;
    if (r.chance(0.035)) {
      const n = r.range(7, 47);
      const lo = n >= 32 ? r.u32() : r.u32() & ((1 << n) - 1);
      const hi = n > 32 ? r.u32() & ((1 << (n - 32)) - 1) : 0;
      this.emitPayload(PacketType.Tnt64, hi, lo, n);
    } else {
      const n = r.chance(0.6) ? r.range(4, 6) : r.range(1, 3);
      this.emitPayload(PacketType.Tnt8, 0, r.u32() & ((1 << n) - 1), n);
    }
  }

  private moveTo(region: Region, offset: number): void {
    this.region = region;
    this.ipHi = region.hi;
    this.ipLo = (region.lo + (offset % region.size)) >>> 0;
  }

  /** Pick the next branch target inside the current address space. */
  private branchTarget(): void {
    const r = this.rng;
    const x = r.float();
    if (x < 0.58) {
      // Near: same 64 KiB page (update-16).
      this.ipLo = ((this.ipLo & 0xffff0000) | r.below(0x10000)) >>> 0;
    } else if (x < 0.88) {
      // Elsewhere in the same module (usually update-32).
      this.moveTo(this.region, r.below(this.region.size));
    } else {
      // Another module: in user space usually a 48-bit change.
      const set = this.inKernel ? this.kernel : this.user;
      this.moveTo(set[r.below(set.length)]!, r.below(0x1000000));
    }
  }

  private ipEvent(): void {
    const r = this.rng;
    const x = r.float();
    if (x < 0.86) {
      // Indirect call/jump or return.
      if (r.chance(0.004)) {
        this.check(this.enc.emitSuppressed(PacketType.Tip));
        return;
      }
      this.branchTarget();
      this.emitIp(PacketType.Tip);
    } else if (x < 0.96) {
      if (!this.inKernel) {
        // Syscall (far branch: TIP) or interrupt (FUP at the interrupted IP, then TIP).
        this.savedRegion = this.region;
        this.savedHi = this.ipHi;
        this.savedLo = this.ipLo;
        if (r.chance(0.5)) this.emitIp(PacketType.Fup);
        this.inKernel = true;
        this.region = this.kernel[0]!;
        this.ipHi = this.region.hi;
        this.ipLo = this.kernelEntries[r.below(this.kernelEntries.length)]!;
        this.emitIp(PacketType.Tip);
      } else {
        // Context switch now and then, then sysret/iret back to user space.
        if (r.chance(0.05)) {
          this.cr3 = r.below(0x100000) << 12;
          this.emitPayload(PacketType.Pip, 0, this.cr3);
        }
        this.inKernel = false;
        this.region = this.savedRegion;
        this.ipHi = this.savedHi;
        this.ipLo = (this.savedLo + r.range(2, 7)) >>> 0;
        this.emitIp(PacketType.Tip);
      }
    } else {
      // Tracing disabled and re-enabled (filtering, or a user-only window): TIP.PGD,
      // mostly with the IP suppressed, then MODE.Exec and TIP.PGE at the new IP.
      if (r.chance(0.7)) this.check(this.enc.emitSuppressed(PacketType.TipPgd));
      else this.emitIp(PacketType.TipPgd);
      if (r.chance(0.3)) this.timing();
      this.branchTarget();
      this.emitSimple(PacketType.ModeExec, 0, 0, Flag.CsL);
      this.emitIp(PacketType.TipPge);
    }
  }

  private advanceTsc(delta: number): void {
    const lo = this.tscLo + delta;
    this.tscLo = lo >>> 0;
    if (lo > 0xffffffff) this.tscHi = (this.tscHi + 1) & 0xffffff;
  }

  private timing(): void {
    const r = this.rng;
    const x = r.float();
    if (x < 0.45) {
      this.ctc = (this.ctc + 1) & 0xffff;
      this.emitSimple(PacketType.Mtc, this.ctc & 0xff);
    } else if (x < 0.93) {
      // CYC: mostly small counts (1 byte), some need one or two extension bytes.
      const y = r.float();
      const n = y < 0.55 ? r.range(1, 31) : y < 0.9 ? r.range(32, 4095) : r.range(4096, 0x7ffff);
      this.emitPayload(PacketType.Cyc, 0, n);
    } else if (x < 0.985) {
      this.advanceTsc(r.range(1000, 100000));
      this.emitPayload(PacketType.Tsc, this.tscHi, this.tscLo);
    } else {
      this.cbr = r.range(8, 45);
      this.emitSimple(PacketType.Cbr, this.cbr);
    }
  }

  private padRun(): void {
    const n = this.rng.range(1, 16);
    for (let i = 0; i < n; i++) this.emitSimple(PacketType.Pad);
  }
}

/** Generate the trace for `seed`, exactly `size` bytes long. */
export function generateTrace(options: GenerateOptions = {}): Uint8Array {
  const seed = options.seed ?? DEFAULT_SEED;
  const size = options.size ?? DEFAULT_SIZE;
  return new Generator(seed).generate(size);
}

export interface CachedTrace {
  path: string;
  bytes: Uint8Array;
  /** Milliseconds spent generating, or undefined when it came from the cache. */
  generatedMs: number | undefined;
}

/** The cache file for a seed and size: bench/.cache/synthetic-<seed>-<size>.pt. */
export function tracePath(seed: number, size: number): string {
  return join(CACHE_DIR, `synthetic-${seed}-${size}.pt`);
}

/**
 * Load the trace from the cache, or generate and cache it. A sidecar
 * `<file>.version` records the generator version; a mismatch regenerates.
 */
export function loadOrGenerate(seed: number, size: number): CachedTrace {
  const path = tracePath(seed, size);
  const versionPath = `${path}.version`;
  if (existsSync(path) && existsSync(versionPath)) {
    const version = readFileSync(versionPath, "utf8").trim();
    const bytes = new Uint8Array(readFileSync(path));
    if (version === String(GENERATOR_VERSION) && bytes.length === size) {
      return { path, bytes, generatedMs: undefined };
    }
  }
  const start = process.hrtime.bigint();
  const bytes = generateTrace({ seed, size });
  const generatedMs = Number(process.hrtime.bigint() - start) / 1e6;
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
  writeFileSync(versionPath, `${GENERATOR_VERSION}\n`);
  return { path, bytes, generatedMs };
}

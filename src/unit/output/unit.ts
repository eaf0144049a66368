/**
 * The trace unit's output stage: where the packet generator's bytes go in physical
 * memory, for single-range output (§33.2.7.1) and ToPA (§33.2.7.2), with the output
 * MSRs updated as the processor updates them, ToPA STOP and INT, PMI preservation and
 * the operational errors.
 *
 * Protocol: the simulator writes the MSRs through the {@link MsrFile} (WRMSR rules),
 * calls {@link OutputUnit.enable} when TraceEn goes 0 -> 1, {@link OutputUnit.write}
 * for every run of packet bytes, and {@link OutputUnit.disable} when TraceEn goes
 * 1 -> 0. The unit keeps IA32_RTIT_OUTPUT_BASE / OUTPUT_MASK_PTRS / STATUS in the
 * register file current after every call (the SDM only guarantees this once TraceEn
 * is cleared; being always current is one valid behaviour).
 *
 * Modelling choices, where the SDM leaves room:
 * - After a region fills, the next entry is read at once (the SDM: "when the region
 *   is filled, proc_trace_table_offset moves to the next entry"), so an error in the
 *   next entry is reported by the write that filled the region.
 * - An END entry is followed as part of reaching the next entry; on an error the
 *   output MSRs point at the offending entry, OutputOffset 0.
 * - PMI skid (seed 001, "ToPA PMI": "This interrupt is not precise"): with `pmiSkid`
 *   n, a PMI is signalled once n more bytes have been written after its trigger (or
 *   when output stops first, by TraceEn cleared or a ToPA STOP: the model delivers it
 *   then); PendTopaPMI is set at
 *   the trigger. Default 0: at the trigger.
 * - A processor with a single ToPA output region "will attempt to signal a ToPA PMI
 *   interrupt before the output wraps and overwrites the top of the buffer" (seed 001,
 *   "ToPA PMI and Single Output Region ToPA Implementation"): with `earlyPmi` n its
 *   INT region's PMI triggers when n bytes of the region are left (default 0: when it
 *   fills). With a skid of more than n bytes the output wraps before the PMI, as the
 *   seed warns.
 * - Restricted memory (SMRR ranges, §33.2.7.4 Table 33-5, seed 001): stores there
 *   are dropped and the bytes read back as all ones (the model writes 0xFF there, as
 *   software reading the range would see); reaching it with the output pointer is an
 *   operational error (`restrictedOutput` "error", the default) or not ("drop": output
 *   resumes past the range), as the SDM allows both. A ToPA write pointer in it is an
 *   error. The 4 KiB APIC page (IA32_APIC_BASE) takes no trace stores and signals no
 *   error (§33.2.7.4): those bytes do not reach memory.
 * - FabricEn output is not modelled.
 */
import type { Halves } from "../bits.js";
import type { MsrFile } from "../msr-file.js";
import { CTL, MASK_PTRS_LOWER_ONES, Msr, STATUS } from "../msr-layout.js";
import { OutputError, type OutputErrorInfo } from "./errors.js";
import type { PhysMemory } from "./memory.js";
import { hex, nextTopaIndex, resolveTopa, type TopaRegion, type TopaRules, topaRules } from "./topa.js";

const TWO32 = 2 ** 32;
const TRIGGER_EN = 1 << STATUS.TriggerEn.lsb;
const ERROR = 1 << STATUS.Error.lsb;
const STOPPED = 1 << STATUS.Stopped.lsb;
const PEND_TOPA_PMI = 1 << STATUS.PendTopaPMI.lsb;
const TOPA = 1 << CTL.ToPA.lsb;
const FABRIC_EN = 1 << CTL.FabricEn.lsb;
const INJECT_HI = 1 << (CTL.InjectPsbPmiOnEnable.lsb - 32);

/** A ToPA performance-monitoring interrupt. */
export interface PmiEvent {
  /** "region-filled": an INT=1 region filled; "pending-on-enable": PendTopaPMI was set when TraceEn went 0 -> 1. */
  readonly cause: "region-filled" | "pending-on-enable";
  /** The filled region's table and entry (-1 for "pending-on-enable"). */
  readonly tableBase: number;
  readonly index: number;
  /** Whether the same entry also had STOP=1 (STOP happens before INT: Stopped is already set). */
  readonly stopped: boolean;
  /** Whether PMI preservation recorded it in IA32_RTIT_STATUS.PendTopaPMI. */
  readonly pended: boolean;
  /** Bytes accepted by the unit since it was constructed, when the PMI fired. */
  readonly byteCount: number;
}

/** What one {@link OutputUnit.write} did. The same object is returned by every call. */
export interface WriteResult {
  /** Bytes stored (the rest were lost: output stopped or failed). */
  accepted: number;
  /** Output ceased because a STOP region filled (IA32_RTIT_STATUS.Stopped). */
  stopped: boolean;
  /** Output ceased on an operational error (IA32_RTIT_STATUS.Error); see {@link OutputUnit.lastError}. */
  error: boolean;
  /** PMIs signalled during this call. */
  pmis: number;
}

/** A physical address range [base, base + size). */
export interface PhysRange {
  readonly base: number;
  readonly size: number;
}

export interface OutputUnitOptions {
  /** Called for every ToPA PMI, synchronously, inside write() or enable(). */
  onPmi?: (event: PmiEvent) => void;
  /** Restricted memory (SMRR ranges) trace output may not be stored to. Default none. */
  restricted?: readonly PhysRange[];
  /** Reaching restricted memory: an operational error ("error", default) or dropped stores only ("drop"). */
  restrictedOutput?: "error" | "drop";
  /** IA32_APIC_BASE's page base (4 KiB aligned). Default 0xFEE00000, the reset value. */
  apicBase?: number;
  /** Bytes written between a PMI's trigger and its delivery. Default 0. */
  pmiSkid?: number;
  /** Single-output-region ToPA: the INT PMI triggers this many bytes before the region fills. Default 0. */
  earlyPmi?: number;
}

/** The reset value of IA32_APIC_BASE's base address. */
export const DEFAULT_APIC_BASE = 0xfee00000;
const APIC_PAGE = 4096;
const ALL_ONES = new Uint8Array(APIC_PAGE).fill(0xff);

export type OutputMode = "off" | "single-range" | "topa";

export class OutputUnit {
  readonly msrs: MsrFile;
  readonly memory: PhysMemory;
  onPmi: ((event: PmiEvent) => void) | undefined;
  /** IA32_PERF_GLOBAL_STATUS.Trace_ToPA_PMI (bit 55): set by a ToPA PMI, cleared by software. */
  perfGlobalStatusTopaPmi = false;
  /** The last operational error, or null. */
  lastError: OutputErrorInfo | null = null;
  /** Bytes accepted since construction. */
  byteCount = 0;
  /** Bytes dropped because they went to restricted memory, and to the APIC page. */
  restrictedBytes = 0;
  apicBytes = 0;
  private readonly restricted: readonly PhysRange[];
  private readonly restrictedError: boolean;
  private readonly apicBase: number;
  private readonly pmiSkid: number;
  private readonly earlyPmi: number;
  /** A triggered PMI waiting out its skid ({@link skidLeft} bytes more), else null. */
  private held: PmiEvent | null = null;
  private skidLeft = 0;
  /** The current region's early PMI has triggered (no second one when it fills). */
  private earlyDone = false;

  private mode: OutputMode = "off";
  /** Whether bytes are being stored (enabled, not stopped, no error). */
  private active = false;
  private readonly rules: TopaRules;
  private readonly region: TopaRegion = {
    tableBase: 0,
    index: 0,
    regionBase: 0,
    regionSize: 0,
    int: false,
    stop: false,
  };
  /** ToPA: proc_trace_output_offset; single range: OutputOffset. */
  private offset = 0;
  // Single range.
  private srBase = 0;
  private srMask = 0;
  private readonly result: WriteResult = { accepted: 0, stopped: false, error: false, pmis: 0 };

  constructor(msrs: MsrFile, memory: PhysMemory, options: OutputUnitOptions = {}) {
    this.msrs = msrs;
    this.memory = memory;
    this.rules = topaRules(msrs.caps);
    this.onPmi = options.onPmi;
    this.restricted = options.restricted ?? [];
    this.restrictedError = (options.restrictedOutput ?? "error") === "error";
    this.apicBase = options.apicBase ?? DEFAULT_APIC_BASE;
    for (const r of this.restricted) {
      if (!(Number.isSafeInteger(r.base) && Number.isSafeInteger(r.size) && r.base >= 0 && r.size > 0))
        throw new RangeError(
          `OutputUnit: restricted range ${JSON.stringify(r)} is not a base >= 0 and a size > 0`,
        );
    }
    this.pmiSkid = options.pmiSkid ?? 0;
    this.earlyPmi = options.earlyPmi ?? 0;
    for (const [name, v] of [
      ["pmiSkid", this.pmiSkid],
      ["earlyPmi", this.earlyPmi],
    ] as const) {
      if (!Number.isSafeInteger(v) || v < 0)
        throw new RangeError(`OutputUnit: ${name} ${v} is not an integer >= 0`);
    }
    if (!Number.isSafeInteger(this.apicBase) || this.apicBase % APIC_PAGE !== 0)
      throw new RangeError(`OutputUnit: apicBase ${this.apicBase} is not 4 KiB aligned`);
  }

  /** The output scheme in use ("off" before enable and after disable). */
  get outputMode(): OutputMode {
    return this.mode;
  }

  /** Whether write() stores bytes now. */
  get storing(): boolean {
    return this.active;
  }

  /**
   * TraceEn went 0 -> 1: load proc_trace_* from the output MSRs and check them. Returns
   * the operational error found (also in {@link lastError}, with STATUS.Error set), or null.
   * Throws RangeError when TraceEn is 0 or FabricEn=1 (not memory output).
   */
  enable(): OutputErrorInfo | null {
    const m = this.msrs;
    if (!m.traceEn) throw new RangeError("OutputUnit.enable: IA32_RTIT_CTL.TraceEn is 0");
    if ((m.ctlLo & FABRIC_EN) !== 0)
      throw new RangeError("OutputUnit.enable: FabricEn output is not modelled");
    this.mode = (m.ctlLo & TOPA) !== 0 ? "topa" : "single-range";
    // PMI preservation: a PMI pended at disable is signalled again on enable.
    if (this.preservation() && (m.statusLo & PEND_TOPA_PMI) !== 0) {
      this.signal({
        cause: "pending-on-enable",
        tableBase: -1,
        index: -1,
        stopped: false,
        pended: true,
        byteCount: this.byteCount,
      });
    }
    if ((m.statusLo & (ERROR | STOPPED)) !== 0) {
      // Stopped or Error left set by software: TriggerEn stays 0, nothing is output.
      this.active = false;
      this.setStatus((m.statusLo & ~TRIGGER_EN) >>> 0);
      return null;
    }
    const err = this.mode === "topa" ? this.loadTopa() : this.loadSingleRange();
    if (err) {
      this.fail(err, false);
      return err;
    }
    this.active = true;
    this.setStatus((m.statusLo | TRIGGER_EN) >>> 0);
    return null;
  }

  /** TraceEn went 1 -> 0: the output MSRs hold the final pointers; TriggerEn is cleared. */
  disable(): void {
    this.deliverHeld();
    if (this.active) this.syncPointers();
    this.active = false;
    this.mode = "off";
    this.setStatus((this.msrs.statusLo & ~TRIGGER_EN) >>> 0);
  }

  /**
   * Store `length` bytes of `bytes` from `offset`. Returns how many were accepted and
   * whether output stopped, failed or signalled PMIs (the returned object is reused).
   * Never throws on trace conditions.
   */
  write(bytes: Uint8Array, offset = 0, length = bytes.length - offset): WriteResult {
    const r = this.result;
    r.accepted = 0;
    r.pmis = 0;
    let pos = offset;
    let left = length;
    if (this.active) {
      if (this.mode === "topa") {
        while (left > 0 && this.active) {
          const reg = this.region;
          // Stop at the region's end, an early PMI's trigger and a held PMI's delivery.
          const early = this.earlyTrigger();
          let want = Math.min((early > this.offset ? early : reg.regionSize) - this.offset, left);
          if (this.held !== null) want = Math.min(want, this.skidLeft);
          const n = this.store(reg.regionBase + this.offset, bytes, pos, want);
          this.offset += n;
          pos += n;
          left -= n;
          r.accepted += n;
          this.byteCount += n;
          if (n < want) {
            this.restrictedFail(reg.regionBase + this.offset, reg.tableBase, reg.index);
            break;
          }
          if (this.held !== null) {
            this.skidLeft -= n;
            if (this.skidLeft === 0) r.pmis += this.deliverHeld();
          }
          if (this.offset === early) {
            this.earlyDone = true;
            r.pmis += this.pmiTriggered(reg.tableBase, reg.index, false);
          }
          if (this.offset === reg.regionSize) r.pmis += this.regionFilled();
        }
      } else {
        const size = this.srMask + 1;
        const base = this.srBase - (this.srBase % size);
        while (left > 0) {
          const want = Math.min(size - this.offset, left);
          const n = this.store(base + this.offset, bytes, pos, want);
          this.offset += n;
          pos += n;
          left -= n;
          r.accepted += n;
          this.byteCount += n;
          if (n < want) {
            this.restrictedFail(base + this.offset, this.srBase, -1);
            break;
          }
          if (this.offset === size) this.offset = 0;
        }
      }
      this.syncPointers();
    }
    const st = this.msrs.statusLo;
    r.stopped = (st & STOPPED) !== 0;
    r.error = (st & ERROR) !== 0;
    return r;
  }

  // ToPA.

  private loadTopa(): OutputErrorInfo | null {
    const m = this.msrs;
    const tableBase = m.outputBaseHi * TWO32 + m.outputBaseLo;
    const index = (m.outputMaskLo >>> 7) & 0x1ffffff;
    this.offset = m.outputMaskHi >>> 0;
    this.region.tableBase = tableBase;
    this.region.index = index;
    if ((m.outputBaseLo & 0xfff) !== 0) {
      return {
        kind: OutputError.TableMisaligned,
        tableBase,
        index: -1,
        reason: `table base ${hex(tableBase)} is not 4 KiB aligned`,
      };
    }
    const err = resolveTopa(this.memory, this.rules, tableBase, index, this.region) ?? this.tableRestricted();
    if (err) return err;
    if (this.offset >= this.region.regionSize) {
      return {
        kind: OutputError.OffsetBeyondRegion,
        tableBase: this.region.tableBase,
        index: this.region.index,
        reason: `OutputOffset ${hex(this.offset)} >= region size ${hex(this.region.regionSize)}`,
      };
    }
    return null;
  }

  /** The current region is full: STOP, INT, then move to the next entry. Returns PMIs signalled. */
  private regionFilled(): number {
    const reg = this.region;
    const { tableBase, index } = reg;
    let stopped = false;
    if (reg.stop) {
      // Output ceases at the last byte of the region; the pointers stay on this entry
      // with OutputOffset = region size. No TIP.PGD.
      stopped = true;
      this.active = false;
      this.setStatus(((this.msrs.statusLo | STOPPED) & ~TRIGGER_EN) >>> 0);
    }
    let pmis = 0;
    if (reg.int && !this.earlyDone) pmis += this.pmiTriggered(tableBase, index, stopped);
    if (stopped) return pmis + this.deliverHeld();
    this.offset = 0;
    this.earlyDone = false;
    const err =
      resolveTopa(this.memory, this.rules, tableBase, nextTopaIndex(index), reg) ?? this.tableRestricted();
    if (err) this.fail(err, true);
    return pmis;
  }

  // PMI skid and the early PMI.

  /** The offset in the current region where its early PMI triggers, or -1. */
  private earlyTrigger(): number {
    const reg = this.region;
    if (this.earlyPmi === 0 || !reg.int || this.earlyDone || this.rules.multipleEntries) return -1;
    return Math.max(0, reg.regionSize - this.earlyPmi);
  }

  /** An INT region's PMI triggers: PendTopaPMI now, the PMI after the skid. Returns PMIs signalled now. */
  private pmiTriggered(tableBase: number, index: number, stopped: boolean): number {
    const pended = this.preservation();
    if (pended) this.setStatus((this.msrs.statusLo | PEND_TOPA_PMI) >>> 0);
    // One PMI waits at a time: an earlier one still held is delivered first.
    const pmis = this.deliverHeld();
    const e: PmiEvent = {
      cause: "region-filled",
      tableBase,
      index,
      stopped,
      pended,
      byteCount: this.byteCount,
    };
    if (this.pmiSkid === 0) {
      this.signal(e);
      return pmis + 1;
    }
    this.held = e;
    this.skidLeft = this.pmiSkid;
    return pmis;
  }

  /** Deliver a held PMI now (its skid has passed, or tracing stops). Returns PMIs signalled. */
  private deliverHeld(): number {
    const e = this.held;
    if (e === null) return 0;
    this.held = null;
    this.signal({ ...e, byteCount: this.byteCount });
    return 1;
  }

  // Restricted memory and the APIC page (§33.2.7.4).

  /** The ToPA write pointer of the entry reached, if it is in restricted memory. */
  private tableRestricted(): OutputErrorInfo | null {
    const reg = this.region;
    const at = reg.tableBase + 8 * reg.index;
    if (this.restrictedEnd(at) < 0) return null;
    return {
      kind: OutputError.RestrictedTable,
      tableBase: reg.tableBase,
      index: reg.index,
      reason: `the ToPA entry at ${hex(at)} is in restricted memory`,
    };
  }

  /** The end of the restricted range holding `addr`, or -1. */
  private restrictedEnd(addr: number): number {
    for (const r of this.restricted) if (addr >= r.base && addr < r.base + r.size) return r.base + r.size;
    return -1;
  }

  /**
   * Store `n` bytes at physical `addr`: restricted memory and the APIC page take none
   * (restricted bytes then read as all ones). Returns how many bytes were passed on
   * before the output pointer reached restricted memory with `restrictedOutput`
   * "error" (n when it did not).
   */
  private store(addr: number, bytes: Uint8Array, pos: number, n: number): number {
    let done = 0;
    while (done < n) {
      const a = addr + done;
      const left = n - done;
      const rEnd = this.restrictedEnd(a);
      if (rEnd >= 0) {
        if (this.restrictedError) return done;
        const k = Math.min(left, rEnd - a);
        for (let w = 0; w < k; w += APIC_PAGE)
          this.memory.write(a + w, ALL_ONES, 0, Math.min(APIC_PAGE, k - w));
        this.restrictedBytes += k;
        done += k;
        continue;
      }
      if (a >= this.apicBase && a < this.apicBase + APIC_PAGE) {
        const k = Math.min(left, this.apicBase + APIC_PAGE - a);
        this.apicBytes += k;
        done += k;
        continue;
      }
      // Up to the next blocked byte.
      let k = left;
      for (const r of this.restricted) if (r.base > a && r.base - a < k) k = r.base - a;
      if (this.apicBase > a && this.apicBase - a < k) k = this.apicBase - a;
      this.memory.write(a, bytes, pos + done, k);
      done += k;
    }
    return n;
  }

  /** The output pointer reached restricted memory at `addr`: operational error, pointers there. */
  private restrictedFail(addr: number, tableBase: number, index: number): void {
    this.fail(
      {
        kind: OutputError.RestrictedOutput,
        tableBase,
        index,
        reason: `the output pointer reached restricted memory at ${hex(addr)}`,
      },
      true,
    );
  }

  // Single range.

  private loadSingleRange(): OutputErrorInfo | null {
    const m = this.msrs;
    const mask = m.outputMaskLo >>> 0;
    this.srMask = mask;
    this.srBase = m.outputBaseHi * TWO32 + m.outputBaseLo;
    this.offset = m.outputMaskHi >>> 0;
    const at = (kind: OutputError, reason: string): OutputErrorInfo => ({
      kind,
      tableBase: this.srBase,
      index: -1,
      reason,
    });
    if (((mask + 1) & mask) !== 0) {
      return at(OutputError.MaskNotContiguous, `mask ${hex(mask)} has a 0 below its most significant 1`);
    }
    if ((m.outputBaseLo & mask & ~MASK_PTRS_LOWER_ONES) !== 0) {
      return at(OutputError.BaseMaskOverlap, `base ${hex(this.srBase)} & mask ${hex(mask)} is not 0`);
    }
    if (this.offset > mask) {
      return at(OutputError.OffsetBeyondMask, `OutputOffset ${hex(this.offset)} > mask ${hex(mask)}`);
    }
    return null;
  }

  // Shared.

  private preservation(): boolean {
    return this.msrs.caps.psbPmiPreservation && (this.msrs.ctlHi & INJECT_HI) !== 0;
  }

  private signal(e: PmiEvent): void {
    this.perfGlobalStatusTopaPmi = true;
    this.onPmi?.(e);
  }

  /**
   * Record an operational error: STATUS.Error set, TriggerEn cleared, output stops. An
   * error found on enable leaves the output MSRs as software wrote them; one found on
   * reaching an entry leaves them pointing at that entry with OutputOffset 0.
   */
  private fail(err: OutputErrorInfo, reached: boolean): void {
    this.lastError = err;
    this.active = false;
    this.setStatus(((this.msrs.statusLo | ERROR) & ~TRIGGER_EN) >>> 0);
    if (reached) this.syncPointers();
  }

  private syncPointers(): void {
    if (this.mode === "topa") {
      this.setBase(this.region.tableBase);
      this.setMaskPtrs(this.region.index, this.offset);
    } else if (this.mode === "single-range") {
      this.msrs.setByProcessor(Msr.OutputMaskPtrs, this.offset, this.msrs.outputMaskLo);
    }
  }

  private setBase(tableBase: number): void {
    this.msrs.setByProcessor(Msr.OutputBase, Math.floor(tableBase / TWO32), tableBase % TWO32);
  }

  private setMaskPtrs(index: number, offset: number): void {
    this.msrs.setByProcessor(Msr.OutputMaskPtrs, offset >>> 0, ((index << 7) | MASK_PTRS_LOWER_ONES) >>> 0);
  }

  private setStatus(lo: number): void {
    this.msrs.setByProcessor(Msr.Status, this.msrs.statusHi, lo);
  }
}

/** Read back the output MSR halves (for tests and the reader). */
export function outputRegisters(m: MsrFile): { base: Halves; maskPtrs: Halves; status: Halves } {
  return {
    base: { hi: m.outputBaseHi, lo: m.outputBaseLo },
    maskPtrs: { hi: m.outputMaskHi, lo: m.outputMaskLo },
    status: { hi: m.statusHi, lo: m.statusLo },
  };
}

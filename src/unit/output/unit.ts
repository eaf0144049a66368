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
 * - A single-output-region ToPA processor signals its INT PMI when the region fills
 *   (the SDM says such processors try to signal before; PMI skid is not modelled).
 * - Restricted memory (SMRR, §33.2.7.4) and FabricEn output are not modelled.
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

export interface OutputUnitOptions {
  /** Called for every ToPA PMI, synchronously, inside write() or enable(). */
  onPmi?: (event: PmiEvent) => void;
}

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
          const n = Math.min(reg.regionSize - this.offset, left);
          this.memory.write(reg.regionBase + this.offset, bytes, pos, n);
          this.offset += n;
          pos += n;
          left -= n;
          r.accepted += n;
          this.byteCount += n;
          if (this.offset === reg.regionSize) r.pmis += this.regionFilled();
        }
      } else {
        const size = this.srMask + 1;
        const base = this.srBase - (this.srBase % size);
        while (left > 0) {
          const n = Math.min(size - this.offset, left);
          this.memory.write(base + this.offset, bytes, pos, n);
          this.offset += n;
          if (this.offset === size) this.offset = 0;
          pos += n;
          left -= n;
          r.accepted += n;
          this.byteCount += n;
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
    const err = resolveTopa(this.memory, this.rules, tableBase, index, this.region);
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
    if (reg.int) {
      const pended = this.preservation();
      if (pended) this.setStatus((this.msrs.statusLo | PEND_TOPA_PMI) >>> 0);
      this.signal({ cause: "region-filled", tableBase, index, stopped, pended, byteCount: this.byteCount });
      pmis = 1;
    }
    if (stopped) return pmis;
    this.offset = 0;
    const err = resolveTopa(this.memory, this.rules, tableBase, nextTopaIndex(index), reg);
    if (err) this.fail(err, true);
    return pmis;
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

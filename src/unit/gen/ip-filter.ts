/**
 * IP filtering and TraceStop ranges (SDM §36.2.4.3): the ADDRn_A..ADDRn_B pairs
 * (inclusive) whose IA32_RTIT_CTL.ADDRn_CFG is 1 (FilterEn range) or 2 (TraceStop
 * range), loaded from the register file when tracing is enabled.
 */
import { lt64 } from "../../base/u64.js";
import { getField } from "../bits.js";
import type { MsrFile } from "../msr-file.js";
import { AddrCfg, CTL_ADDR_CFG } from "../msr-layout.js";

export class IpFilter {
  /** Per range: [aHi, aLo, bHi, bLo]. */
  private readonly bounds = new Uint32Array(16);
  private readonly cfg = new Uint8Array(4);
  private count = 0;
  /** Whether any FilterEn range is configured (else FilterEn is always 1). */
  filtering = false;
  /** Whether any TraceStop range is configured. */
  stopping = false;

  load(msrs: MsrFile): void {
    this.count = msrs.addressRanges;
    this.filtering = false;
    this.stopping = false;
    for (let n = 0; n < this.count; n++) {
      const cfg = getField(msrs.ctlHi, msrs.ctlLo, CTL_ADDR_CFG[n]!);
      this.cfg[n] = cfg;
      for (let k = 0; k < 4; k++) this.bounds[4 * n + k] = msrs.addr[4 * n + k]!;
      if (cfg === AddrCfg.Filter) this.filtering = true;
      if (cfg === AddrCfg.TraceStop) this.stopping = true;
    }
  }

  /** FilterEn for a branch landing at hi:lo. */
  filterEn(hi: number, lo: number): boolean {
    return !this.filtering || this.inAny(AddrCfg.Filter, hi, lo);
  }

  /** Whether hi:lo lies in a TraceStop range. */
  stopsAt(hi: number, lo: number): boolean {
    return this.stopping && this.inAny(AddrCfg.TraceStop, hi, lo);
  }

  private inAny(cfg: number, hi: number, lo: number): boolean {
    const b = this.bounds;
    for (let n = 0; n < this.count; n++) {
      if (this.cfg[n] !== cfg) continue;
      const k = 4 * n;
      if (!lt64(hi, lo, b[k]!, b[k + 1]!) && !lt64(b[k + 2]!, b[k + 3]!, hi, lo)) return true;
    }
    return false;
  }
}

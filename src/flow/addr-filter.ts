/**
 * The IP-filter configuration (IA32_RTIT_CTL.ADDRn_CFG with IA32_RTIT_ADDRn_A/B) as
 * the flow decoder asks it: would tracing be on at this address? Used for erratum
 * SKL014, where a TIP.PGD without IP leaves the decoder to find the direct branch
 * that left the filter region.
 *
 * The ranges are split into 32-bit halves once, so that checks need no BigInt.
 */

import { splitBigInt } from "../base/halves.js";
import type { AddrFilter } from "../event/index.js";

/** ADDRn_CFG values (SDM "IA32_RTIT_CTL"). */
export const AddrCfg = {
  Disabled: 0,
  /** FilterEn: trace only inside the range. */
  Filter: 1,
  /** TraceStop: stop tracing on entering the range. */
  Stop: 2,
} as const;

const N = 4;

export class AddrFilterCheck {
  private readonly cfg = new Uint8Array(N);
  private readonly aHi = new Uint32Array(N);
  private readonly aLo = new Uint32Array(N);
  private readonly bHi = new Uint32Array(N);
  private readonly bLo = new Uint32Array(N);
  /** At least one range is configured. */
  readonly configured: boolean;
  private readonly hasFilter: boolean;

  constructor(filter: AddrFilter) {
    const half = { hi: 0, lo: 0 };
    let configured = false;
    let hasFilter = false;
    for (let n = 0; n < N; n++) {
      const cfg = filter.cfg[n]! & 0xf;
      this.cfg[n] = cfg;
      if (cfg !== 0) configured = true;
      if (cfg === AddrCfg.Filter) hasFilter = true;
      splitBigInt(filter.a[n]!, half);
      this.aHi[n] = half.hi;
      this.aLo[n] = half.lo;
      splitBigInt(filter.b[n]!, half);
      this.bHi[n] = half.hi;
      this.bLo[n] = half.lo;
    }
    this.configured = configured;
    this.hasFilter = hasFilter;
  }

  /**
   * Whether tracing is on at (hi:lo): false inside a TraceStop range; otherwise true
   * inside a FilterEn range or when there is none (libipt `pt_filter_addr_check`).
   */
  allows(hi: number, lo: number): boolean {
    for (let n = 0; n < N; n++) {
      if (this.cfg[n] === AddrCfg.Stop && this.inRange(n, hi, lo)) return false;
    }
    if (!this.hasFilter) return true;
    for (let n = 0; n < N; n++) {
      if (this.cfg[n] === AddrCfg.Filter && this.inRange(n, hi, lo)) return true;
    }
    return false;
  }

  /** A <= addr <= B for range n (both inclusive). */
  private inRange(n: number, hi: number, lo: number): boolean {
    const aHi = this.aHi[n]!;
    const bHi = this.bHi[n]!;
    if (hi < aHi || (hi === aHi && lo < this.aLo[n]!)) return false;
    return hi < bHi || (hi === bHi && lo <= this.bLo[n]!);
  }
}

import { type Errata, noErrata } from "../cpu/index.js";

/** What time estimation needs to know about the trace configuration. */
export interface TimeConfig {
  /** IA32_RTIT_CTL.MTCFreq (ptdump's --mtc-freq); an 8-bit value. */
  mtcFreq: number;
  /** MSR_PLATFORM_INFO[15:8], the nominal core:bus ratio (--nom-freq); 0 if unknown. */
  nomFreq: number;
  /** CPUID leaf 0x15 EAX, the TSC:ART ratio denominator; 0 if unknown. */
  cpuid15Eax: number;
  /** CPUID leaf 0x15 EBX, the TSC:ART ratio numerator; 0 if unknown. */
  cpuid15Ebx: number;
  errata: Errata;
  /**
   * Restart the MTC calibration interval at a TSC more than one MTC wrap (2^(MTCFreq+8)
   * CTC ticks) after the last MTC: the 8 CTC bits of the next MTC cannot tell how many
   * periods the gap held, so libipt (which does not restart) measures the cycles since
   * the last MTC before the gap against a wrapped CTC distance and calibrates CYC
   * wrong, often by orders of magnitude, until the next good MTC pair. Not libipt's;
   * ptkit's analyses (timelines, latencies) use it: a trace recorded per CPU has such
   * a gap wherever its CPU ran something untraced.
   */
  mtcGapRestart?: boolean;
}

/** The configuration ptdump starts from: everything zero, no errata. */
export function defaultTimeConfig(): TimeConfig {
  return { mtcFreq: 0, nomFreq: 0, cpuid15Eax: 0, cpuid15Ebx: 0, errata: noErrata() };
}

/**
 * The configuration reduced to the C field widths libipt stores it in (uint8 for the
 * frequencies, uint32 for the CPUID words), so that trackers read plain numbers.
 */
export class TimeParams {
  readonly mtcFreq: number;
  readonly nomFreq: number;
  readonly eax: number;
  readonly ebx: number;
  readonly skl168: boolean;

  constructor(config: TimeConfig) {
    this.mtcFreq = config.mtcFreq & 0xff;
    this.nomFreq = config.nomFreq & 0xff;
    this.eax = config.cpuid15Eax >>> 0;
    this.ebx = config.cpuid15Ebx >>> 0;
    this.skl168 = config.errata.skl168;
  }
}

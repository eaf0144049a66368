/**
 * The clocks behind the timing packets (SDM §36.8.3 "Tracking Time"): the TSC, which
 * runs at the nominal (P1) frequency; the core clock, at CBR × 100 MHz, stopped in
 * C-states; and the core crystal clock (ART), at TSC × CPUID.15H:EAX / EBX, which
 * MTC and TMA sample. Core cycles and TSC ticks convert through the ratio
 * nominal : CBR with exact integer remainders, so nothing drifts.
 *
 * The TSC is a 64-bit hi/lo pair; the crystal clock and the cycle count are Numbers
 * (exact below 2^53: decades of crystal ticks).
 */
import { U64 } from "../../base/u64.js";

const TWO32 = 2 ** 32;
/** Steps below this times a 32-bit ratio stay exact without splitting. */
const SMALL = 2 ** 20;

export class Clock {
  /** The TSC. */
  readonly tsc = new U64();
  /** Crystal clock (ART) ticks. */
  ctc = 0;
  /** Core cycles since the last CYC packet (the cycle counter of §36.3.6.1). */
  cyc = 0;
  /** Core cycles since the start. */
  total = 0;
  /** Core:bus ratio: core clock = cbr × 100 MHz. */
  cbr: number;
  /** In a C-state deeper than C0: the core clock does not run. */
  sleeping = false;
  /** Core cycles × nominal not yet whole TSC ticks (units of 1/cbr ticks). */
  private tscRem = 0;
  /** TSC ticks × cbr not yet whole core cycles (units of 1/nominal cycles). */
  private coreRem = 0;
  /** TSC × eax mod ebx: how far into the current crystal tick the TSC is. */
  private ctcRem = 0;

  /**
   * @param nominal the TSC : 100 MHz ratio (libipt's nom_freq)
   * @param eax CPUID.15H:EAX, @param ebx CPUID.15H:EBX (TSC / crystal = ebx / eax)
   */
  constructor(
    readonly nominal: number,
    readonly eax: number,
    readonly ebx: number,
    cbr: number,
    tsc: bigint,
  ) {
    this.cbr = cbr;
    this.tsc.big = tsc;
    const scaled = tsc * BigInt(eax);
    this.ctc = Number(scaled / BigInt(ebx));
    this.ctcRem = Number(scaled % BigInt(ebx));
  }

  /** `n` core cycles pass (n >= 0); the TSC and crystal clock follow. */
  cycles(n: number): void {
    if (n <= 0 || this.sleeping) return;
    this.cyc += n;
    this.total += n;
    // Split n so that the products stay exact Numbers.
    const whole = n < SMALL ? 0 : Math.floor(n / this.cbr);
    const part = (n - whole * this.cbr) * this.nominal + this.tscRem;
    if (whole === 0 && part < this.cbr) {
      this.tscRem = part;
      return;
    }
    const extra = Math.floor(part / this.cbr);
    this.tscRem = part - extra * this.cbr;
    this.addTicks(whole * this.nominal + extra);
  }

  /** `n` TSC ticks pass (n >= 0); core cycles follow unless the core sleeps. */
  ticks(n: number): void {
    if (n <= 0) return;
    if (!this.sleeping) {
      const whole = Math.floor(n / this.nominal);
      const part = (n - whole * this.nominal) * this.cbr + this.coreRem;
      const extra = Math.floor(part / this.nominal);
      this.coreRem = part - extra * this.nominal;
      this.cyc += whole * this.cbr + extra;
      this.total += whole * this.cbr + extra;
    }
    this.addTicks(n);
  }

  /** The crystal clock with the fraction of the current tick (for placing events inside a step). */
  crystal(): number {
    return this.ctc + this.ctcRem / this.ebx;
  }

  /** TMA's FastCounter: TSC ticks since the current crystal tick began (9 bits). */
  fastCounter(): number {
    return Math.floor(this.ctcRem / this.eax) & 0x1ff;
  }

  private addTicks(t: number): void {
    const lo = this.tsc.lo + t;
    if (lo < TWO32) {
      this.tsc.lo = lo;
    } else {
      const hi = Math.floor(t / TWO32);
      const rest = this.tsc.lo + (t - hi * TWO32);
      this.tsc.lo = rest >>> 0;
      this.tsc.hi = (this.tsc.hi + hi + (rest >= TWO32 ? 1 : 0)) >>> 0;
    }
    const whole = t < SMALL ? 0 : Math.floor(t / this.ebx);
    const part = (t - whole * this.ebx) * this.eax + this.ctcRem;
    if (whole === 0 && part < this.ebx) {
      this.ctcRem = part;
      return;
    }
    const extra = Math.floor(part / this.ebx);
    this.ctcRem = part - extra * this.ebx;
    this.ctc += whole * this.eax + extra;
  }
}

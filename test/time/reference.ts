/**
 * A BigInt reference model of libipt's time estimation (`pt_time`) and calibration
 * (`pt_tcal`), written straight from the formulas with C's unsigned wrap-around made
 * explicit. It favours obviousness over speed and shares no code with src/time, so
 * tests can compare the two on random packet sequences.
 */

const M64 = (1n << 64n) - 1n;
const M32 = 0xffffffffn;
const u64 = (x: bigint): bigint => x & M64;
const u32 = (x: bigint): bigint => x & M32;
/** C's `1u << n` on x86: the shift count is taken modulo 32. */
const shl32 = (x: bigint, n: number): bigint => u32(x << BigInt(n & 31));

const NO_TIME = -15;
const NO_CBR = -16;
const BAD_PACKET = -5;
const BAD_CONTEXT = -6;
const BAD_CONFIG = -10;
const INTERNAL = -1;

export interface RefConfig {
  mtcFreq: number;
  nomFreq: number;
  eax: number;
  ebx: number;
  skl168: boolean;
}

function ctcDelta(ctc: bigint, last: bigint, cfg: RefConfig): bigint | number {
  let c = ctc;
  if (c < last) {
    c = u32(c + shl32(1n, cfg.mtcFreq + 8));
    if (c < last) return BAD_PACKET;
  }
  return c - last;
}

function ctcFc(delta: bigint, cfg: RefConfig): bigint | number {
  if (cfg.eax === 0 || cfg.ebx === 0) return BAD_CONFIG;
  return (delta * BigInt(cfg.ebx)) / BigInt(cfg.eax);
}

export class RefTime {
  tsc = 0n;
  base = 0n;
  fc = 0n;
  ctc = 0n;
  ctcCyc = 0n;
  lostMtc = 0;
  lostCyc = 0;
  cbr = 0;
  haveTsc = false;
  haveCbr = false;
  haveTma = false;
  haveMtc = false;

  constructor(readonly cfg: RefConfig) {}

  query(): { rc: number; tsc: bigint; lostMtc: number; lostCyc: number } {
    return { rc: this.haveTsc ? 0 : NO_TIME, tsc: this.tsc, lostMtc: this.lostMtc, lostCyc: this.lostCyc };
  }

  queryCbr(): number {
    return this.haveCbr ? this.cbr : NO_CBR;
  }

  tscPacket(tsc: bigint): number {
    this.haveTsc = true;
    this.haveTma = false;
    this.haveMtc = false;
    this.tsc = tsc;
    this.base = tsc;
    this.ctc = 0n;
    this.fc = 0n;
    this.lostMtc = 0;
    this.lostCyc = 0;
    return 0;
  }

  cbrPacket(ratio: number): number {
    if (ratio === 0) return BAD_PACKET;
    this.haveCbr = true;
    this.cbr = ratio;
    return 0;
  }

  tmaPacket(ctc: number, fc: number): number {
    if (!this.haveTsc) return BAD_CONTEXT;
    if (this.haveTma) return BAD_CONTEXT;
    if (this.haveMtc) return INTERNAL;
    const mtcHi = this.cfg.mtcFreq + 8;
    const mask = u32(shl32(1n, mtcHi) - 1n);
    this.haveTma = true;
    this.base = u64(this.base - BigInt(fc));
    this.fc = u64(this.fc + BigInt(fc));
    if (mtcHi <= 16) this.haveMtc = true;
    this.ctc = BigInt(ctc) & mask;
    this.ctcCyc = this.ctc;
    return 0;
  }

  mtcPacket(payload: number): number {
    const { haveTsc, haveTma, haveMtc } = this;
    if (haveTsc && !haveTma) return 0;
    let last = this.ctc;
    const ctc = shl32(BigInt(payload), this.cfg.mtcFreq);
    if (this.fc !== 0n || this.lostCyc !== 0 || !haveMtc) this.ctcCyc = ctc;
    this.haveMtc = true;
    this.fc = 0n;
    this.ctc = ctc;
    this.lostCyc = 0;
    if (!haveMtc) {
      if (!haveTma) return 0;
      if ((last & ~0xffffn) !== 0n) return INTERNAL;
      const lo = ctc & 0xffffn;
      let hi = ctc & u32(~0xffffn);
      if (lo < last) {
        hi = u32(hi - (1n << 16n));
        hi &= shl32(0xffn, this.cfg.mtcFreq);
      }
      last |= hi;
    }
    const delta = ctcDelta(ctc, last, this.cfg);
    if (typeof delta === "number") {
      this.lostMtc += 1;
      return delta;
    }
    const fc = ctcFc(delta, this.cfg);
    if (typeof fc === "number") return fc;
    this.base = u64(this.base + fc);
    this.tsc = this.base;
    return 0;
  }

  cycPacket(value: bigint, fcr: bigint): number {
    if (fcr === 0n) {
      this.lostCyc += 1;
      return 0;
    }
    let cyc = value;
    if (this.fc === 0n && this.ctc !== this.ctcCyc) {
      const delta = ctcDelta(this.ctc, this.ctcCyc, this.cfg);
      if (typeof delta === "number") return delta;
      const fc = ctcFc(delta, this.cfg);
      if (typeof fc === "number") return fc;
      const old = u64(fc << 8n) / fcr;
      cyc = cyc < old ? 0n : cyc - old;
    }
    this.fc = u64(this.fc + (u64(cyc * fcr) >> 8n));
    this.tsc = u64(this.base + this.fc);
    return 0;
  }
}

export class RefCal {
  fcr = 0n;
  minFcr = M64;
  maxFcr = 0n;
  tsc = 0n;
  cycTsc = 0n;
  cycMtc = 0n;
  ctc = 0n;
  lostMtc = 0;
  haveMtc = false;
  checkSkl168 = false;

  constructor(readonly cfg: RefConfig) {}

  reset(): void {
    Object.assign(this, new RefCal(this.cfg));
  }

  hasFcr(): boolean {
    return this.minFcr <= this.maxFcr;
  }

  /** The fcr, or NO_TIME. */
  query(): bigint | number {
    return this.hasFcr() ? this.fcr : NO_TIME;
  }

  setFcr(fcr: bigint): number {
    this.fcr = fcr;
    if (fcr < this.minFcr) this.minFcr = fcr;
    if (fcr > this.maxFcr) this.maxFcr = fcr;
    return 0;
  }

  psb(): number {
    if (this.cfg.skl168) this.checkSkl168 = true;
    return 0;
  }

  tscPacket(tsc: bigint): number {
    this.tsc = tsc;
    this.cycTsc = 0n;
    return 0;
  }

  headerTsc(tsc: bigint): number {
    const last = this.tsc;
    const cyc = this.cycTsc;
    this.tsc = tsc;
    this.cycTsc = 0n;
    if (last === 0n || cyc === 0n) return 0;
    if (this.haveMtc) return 0;
    let t = tsc;
    if (t < last) {
      t = u64(t + (1n << 56n));
      if (t < last) return BAD_PACKET;
    }
    const delta = t - last;
    if (delta >> 56n !== 0n) return INTERNAL;
    return this.setFcr((delta << 8n) / cyc);
  }

  cbrPacket(ratio: number): number {
    this.reset();
    return this.headerCbr(ratio);
  }

  headerCbr(ratio: number): number {
    if (this.cfg.nomFreq === 0) return 0;
    if (ratio === 0) return BAD_PACKET;
    return this.setFcr((BigInt(this.cfg.nomFreq) << 8n) / BigInt(ratio));
  }

  mtcPacket(payload: number): number {
    const last = this.ctc;
    const cyc = this.cycMtc;
    const check = this.checkSkl168;
    this.checkSkl168 = false;
    const ctc = shl32(BigInt(payload), this.cfg.mtcFreq);
    if (!this.haveMtc) {
      this.cycMtc = 0n;
      this.ctc = ctc;
      this.haveMtc = true;
      return 0;
    }
    if (cyc === 0n) return 0;
    this.cycMtc = 0n;
    this.ctc = ctc;
    this.lostMtc += 1;
    const delta = ctcDelta(ctc, last, this.cfg);
    if (typeof delta === "number") return delta;
    const fc = ctcFc(delta, this.cfg);
    if (typeof fc === "number") return fc;
    if (fc >> 56n !== 0n) return INTERNAL;
    const fcr = (fc << 8n) / cyc;
    if (check) {
      if (shl32(1n, this.cfg.mtcFreq) < delta) return 0;
      if (this.cfg.mtcFreq < 10 && this.hasFcr()) {
        const expected = u64(this.fcr * u64(cyc + 0xf00n)) >> 8n;
        if (expected < fc) return 0;
      }
    }
    this.setFcr(fcr);
    this.lostMtc = 0;
    return 0;
  }

  cycPacket(value: bigint): number {
    this.cycMtc = u64(this.cycMtc + value);
    this.cycTsc = u64(this.cycTsc + value);
    return 0;
  }

  ovf(): number {
    this.tsc = 0n;
    this.cycTsc = 0n;
    this.cycMtc = 0n;
    this.ctc = 0n;
    this.haveMtc = false;
    return 0;
  }
}

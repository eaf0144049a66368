/**
 * What the packet generator needs besides the execution: the trace unit's registers,
 * the machine's clocks, and the modelling choices the SDM leaves to implementations.
 */
import { ErrorCode, PtError } from "../../base/errors.js";
import type { MsrFile } from "../msr-file.js";
import type { OutputUnit } from "../output/unit.js";
import { type CpuProfile, SDM_PROFILE } from "../profiles.js";

export interface GenOptions {
  /**
   * The register file: IA32_RTIT_CTL and the other MSRs as software wrote them, with
   * the processor's CPUID leaf 14H. With TraceEn=1, tracing is on from the first
   * instruction (as after a WRMSR just before it). The generator updates STATUS (and,
   * through {@link output}, the output MSRs).
   */
  msrs: MsrFile;
  /**
   * The output stage: packet bytes also go to memory through it. The generator calls
   * its enable, write and disable as TraceEn changes; a ToPA STOP or an operational
   * error ends packet generation (no TIP.PGD).
   */
  output?: OutputUnit;
  /** CPUID.15H:EAX and EBX: TSC / crystal clock = ebx / eax. Default 2 and 308 (a 24 MHz crystal, 3.696 GHz TSC). */
  cpuid15?: { eax: number; ebx: number };
  /** The TSC's frequency in 100 MHz units (libipt's nom_freq). Default 37. */
  nominalRatio?: number;
  /** The core:bus ratio at the start (core clock = cbr × 100 MHz). Default: the nominal ratio. */
  cbr?: number;
  /** The TSC at the start. Default 0x1000000000. */
  tsc?: bigint;
  /** Core cycles each retired instruction takes (0 allowed). Default 1. */
  cyclesPerInsn?: number;
  /** Long TNT packets (up to 47 bits), else short TNT only. Default: the profile's `tnt`. */
  longTnt?: boolean;
  /** The processor has TSX: PSB+ carries MODE.TSX. Default true. */
  tsx?: boolean;
  /**
   * The internal packet buffer, for overflows: it holds `bytes` and passes
   * `drainPerCycle` bytes on per core cycle. Default: never overflows.
   */
  internalBuffer?: { bytes: number; drainPerCycle: number };
  /** Clear TraceEn after the last record (FUP, TIP.PGD when PacketEn=1), as software would. Default true. */
  disableAtEnd?: boolean;
  /** Bytes collected before they are passed to {@link output}. Default 256. */
  outputChunk?: number;
  /**
   * What the processor does where the SDM leaves room: IP compression, PSB+ order and
   * contents, CYC placement (a preset's `profile`). Default {@link SDM_PROFILE}.
   */
  profile?: CpuProfile;
  /**
   * When the processor's RET-compression stack pops: `compressed` (the default) only
   * for a RET it compresses, as libipt and perf decode; `every` for every near RET,
   * compressed or not, as step 3 of the SDM's decoder recipe reads (seed 000). The two
   * differ after a RET whose target is not its CALL's next IP (README, "RET
   * compression": traces made with `every` decode wrongly after such a RET).
   */
  retPop?: "compressed" | "every";
  /**
   * Width in bits (15..52) of the processor's internal cycle counter: in
   * cycle-accurate mode a stand-alone CYC goes out before it would wrap (SDM
   * §36.4.2.14, emitter.ts `standaloneCycs`). The SDM gives no width; default none:
   * the model's counter never wraps and every CYC goes with another packet.
   */
  cycCounterBits?: number;
}

/** {@link GenOptions} with defaults applied and values checked. */
export interface GenConfig {
  readonly msrs: MsrFile;
  readonly output: OutputUnit | undefined;
  readonly ctcEax: number;
  readonly ctcEbx: number;
  readonly nominalRatio: number;
  readonly cbr: number;
  readonly tsc: bigint;
  readonly cyclesPerInsn: number;
  /** Most outcomes one TNT packet carries: 6 (short TNT only) or up to 47 (long TNT above 6). */
  readonly tntBits: number;
  readonly tsx: boolean;
  readonly bufferBytes: number;
  readonly drainPerCycle: number;
  readonly disableAtEnd: boolean;
  readonly outputChunk: number;
  readonly profile: CpuProfile;
  readonly retPop: "compressed" | "every";
  /** The cycle counter's largest value (2^cycCounterBits - 1), 0 for none. */
  readonly cycMax: number;
}

function positive(name: string, v: number, max: number): number {
  if (!Number.isInteger(v) || v < 1 || v > max) {
    throw new PtError(ErrorCode.BadConfig, 0, undefined, `${name} ${v} is not an integer in 1..${max}`);
  }
  return v;
}

function nonNegative(name: string, v: number): number {
  if (!Number.isFinite(v) || v < 0) {
    throw new PtError(ErrorCode.BadConfig, 0, undefined, `${name} ${v} is not a number >= 0`);
  }
  return v;
}

/** A cycle counter above every CycThresh (at most 2^14 cycles, so 15 bits) whose count stays an exact Number. */
function counterBits(v: number): number {
  if (!Number.isInteger(v) || v < 15 || v > 52) {
    throw new PtError(ErrorCode.BadConfig, 0, undefined, `cycCounterBits ${v} is not an integer in 15..52`);
  }
  return v;
}

/** Apply defaults; throws {@link PtError} (`BadConfig`) naming a bad value. */
export function resolveOptions(o: GenOptions): GenConfig {
  const nominalRatio = positive("nominalRatio", o.nominalRatio ?? 37, 255);
  const tsc = o.tsc ?? 0x10_0000_0000n;
  if (tsc < 0n || tsc >> 64n !== 0n)
    throw new PtError(ErrorCode.BadConfig, 0, undefined, "tsc is not a 64-bit value");
  const buf = o.internalBuffer;
  return {
    msrs: o.msrs,
    output: o.output,
    ctcEax: positive("cpuid15.eax", o.cpuid15?.eax ?? 2, 0xffffffff),
    ctcEbx: positive("cpuid15.ebx", o.cpuid15?.ebx ?? 308, 0xffffffff),
    nominalRatio,
    cbr: positive("cbr", o.cbr ?? nominalRatio, 255),
    tsc,
    cyclesPerInsn: nonNegative("cyclesPerInsn", o.cyclesPerInsn ?? 1),
    tntBits: o.longTnt === undefined ? (o.profile ?? SDM_PROFILE).tnt.value : o.longTnt ? 47 : 6,
    tsx: o.tsx ?? true,
    bufferBytes: buf ? positive("internalBuffer.bytes", buf.bytes, 2 ** 30) : 0,
    drainPerCycle: buf ? nonNegative("internalBuffer.drainPerCycle", buf.drainPerCycle) : 0,
    disableAtEnd: o.disableAtEnd ?? true,
    outputChunk: positive("outputChunk", o.outputChunk ?? 256, 2 ** 30),
    profile: o.profile ?? SDM_PROFILE,
    retPop: o.retPop ?? "compressed",
    cycMax: o.cycCounterBits === undefined ? 0 : 2 ** counterBits(o.cycCounterBits) - 1,
  };
}

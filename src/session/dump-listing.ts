/**
 * The ptdump-compatible packet listing: sync, decode every packet, track last IP and
 * time, print one line per packet and one bracketed line per diagnostic.
 */
import type { Diagnostic } from "../base/diagnostic.js";
import { cpuErrata, noErrata, packetQuirks } from "../cpu/index.js";
import {
  type BlockContext,
  ErrorCode,
  errorMessage,
  Flag,
  hex64,
  LastIp,
  PACKET_NAMES,
  PACKET_TYPE_COUNT,
  Packet,
  PacketDecoder,
  PacketType,
  PSB_SIZE,
  type TraceBytes,
} from "../packet/index.js";
import type { SidebandSession } from "../perf/index.js";
import {
  formatFcr,
  formatFcrDelta,
  lt64,
  sub64,
  TimeCalibrator,
  type TimeConfig,
  TimeTracker,
  TscQuery,
  U64,
} from "../time/index.js";
import type { DumpOptions } from "./dump-options.js";
import type { LineWriter } from "./io.js";

/** A note for standard error: text, or a problem at an offset of the trace. */
export type DumpNote = string | Diagnostic;

import { cfeTypeName, evdTypeName, fit, payloadText, usesExtendedPayload, Width } from "./packet-text.js";

/** Packets between progress reports. */
const PROGRESS_EVERY = 1 << 16;

/** Where a piece of a trace starts being dumped (see packet/chunks.ts), and where it stops. */
export interface DumpPieceRange {
  /** Stop at the first packet at or after this offset (not at the end: that is the whole rest). */
  stop: number;
  /** Start at offset 0 without a sync, in the decoder state a dump of the bytes before stopped in. */
  carry?: DumpCarry;
}

/** The packet decoder's state where a piece stopped (offsets relative to that place). */
export interface DumpCarry {
  syncOffset: number;
  block: BlockContext;
}

/** The tracking columns of one line. */
interface Track {
  id: string;
  text: string;
}

export class Dumper {
  private readonly lastIp = new LastIp();
  private readonly time: TimeTracker;
  private readonly tcal: TimeCalibrator;
  private readonly config: TimeConfig;
  private inHeader = false;
  private readonly tsc = new TscQuery();
  private readonly fcr = new U64();
  /** Previous printed TSC (hi/lo) and fcr, for --time-delta. */
  private readonly prevTsc = new U64();
  private readonly tscDelta = new U64();
  private readonly prevFcr = new U64();
  /** Sideband whose records are printed as trace time passes them (--pevent). */
  sideband: SidebandSession | undefined;
  /** Whether the dump found a place to start (a PSB, or the first byte with --no-sync). */
  synced = false;
  /** Called with the trace offset every {@link PROGRESS_EVERY} packets. */
  onProgress: ((offset: number) => void) | undefined;
  /** What the offsets printed are relative to: the trace offset of the first byte dumped (a piece's start). */
  base = 0;
  /** The decoder state where {@link run} stopped. */
  readonly carry: DumpCarry = { syncOffset: -1, block: 0 };

  /**
   * @param warn receives notes that ptdump does not print (stdout stays ptdump's),
   *   such as a packet cut off by the end of the trace (a problem at an offset of the
   *   trace: the front end names the file).
   * @param piece dumps a piece of the trace: the notes of its start (an unknown
   *   --cpu) are the whole dump's, not the piece's.
   */
  constructor(
    private readonly options: DumpOptions,
    private readonly out: LineWriter,
    private readonly warn: (note: DumpNote) => void,
    piece = false,
  ) {
    let errata = noErrata();
    if (options.cpu) {
      const known = cpuErrata(options.cpu);
      if (known) errata = known;
      else if (!piece) this.diag("failed to determine errata", 0, -ErrorCode.BadCpu);
    }
    this.config = {
      mtcFreq: options.mtcFreq,
      nomFreq: options.nomFreq,
      cpuid15Eax: options.cpuid15Eax,
      cpuid15Ebx: options.cpuid15Ebx,
      errata,
    };
    this.time = new TimeTracker(this.config);
    this.tcal = new TimeCalibrator(this.config);
  }

  /** A bracketed line about trace offset `offset` (a piece's offset, or an absolute 0). */
  private diag(what: string, offset: number, code: number, absolute = false): void {
    const at = (absolute ? offset : this.base + offset).toString(16);
    this.out.line(code ? `[${at}: ${what}: ${errorMessage(code)}]` : `[${at}: ${what}]`);
  }

  private resetTracking(): void {
    this.lastIp.reset();
    this.time.reset();
    this.tcal.reset();
    this.prevTsc.set(0, 0);
    this.prevFcr.set(0, 0);
    this.inHeader = false;
  }

  /**
   * Dump the whole trace (held in memory, or read a window at a time), or a piece of
   * it; returns the offset where the dump stopped (the end, or a piece's stop).
   */
  run(trace: Uint8Array | TraceBytes, piece?: DumpPieceRange): number {
    const decoder = new PacketDecoder(trace, { quirks: packetQuirks(this.config.errata) });
    const bytes = decoder.bytes;
    const pkt = new Packet();
    const stop = piece && piece.stop < decoder.end ? piece.stop : Number.POSITIVE_INFINITY;
    let count = 0;
    let status = 0;
    // With --quiet and nothing tracked, a packet changes nothing dumpPacket keeps or prints.
    const o = this.options;
    const silent = o.quiet && !o.trackTime && !o.showLastIp;
    // What a silent dump skims over is counted there, and not used.
    const skimmed = new Float64Array(PACKET_TYPE_COUNT);
    const skimmedBytes = new Float64Array(PACKET_TYPE_COUNT);
    if (piece?.carry) decoder.resume(0, piece.carry.syncOffset, piece.carry.block);
    else status = this.options.noSync ? decoder.syncSet(0) : decoder.syncForward();
    this.synced = status >= 0;
    if (status < 0) {
      if (status !== -ErrorCode.Eos) this.diag("sync error", 0, status, true);
      else this.dumpAllSideband();
      return decoder.end;
    }
    for (;;) {
      // Packets their header byte decides are not even decoded (see skim.ts).
      if (silent) decoder.skim(stop, skimmed, skimmedBytes);
      const offset = decoder.pos;
      if (offset >= stop) {
        this.carry.syncOffset = decoder.syncOffset;
        this.carry.block = decoder.blockContext;
        return offset;
      }
      // Nothing goes back further than a sync after an error here (a PSB it cut into).
      bytes.release(offset - PSB_SIZE);
      status = decoder.next(pkt);
      if (status === -ErrorCode.Eos) {
        const left = decoder.end - offset;
        if (left > 0)
          this.warn({
            offset: this.base + offset,
            message: `a packet cut off by the end of the trace (${left} byte${left === 1 ? "" : "s"})`,
          });
        this.dumpAllSideband();
        return decoder.end;
      }
      if (status < 0) {
        this.diag("error decoding packet", offset, status);
        status = decoder.syncForward();
        if (status < 0) {
          if (status !== -ErrorCode.Eos) this.diag("sync error", 0, status, true);
          else this.dumpAllSideband();
          return decoder.end;
        }
        this.resetTracking();
        continue;
      }
      if (!silent) this.dumpPacket(bytes, offset, pkt);
      if (++count % PROGRESS_EVERY === 0) this.onProgress?.(offset);
    }
  }

  private dumpPacket(bytes: TraceBytes, offset: number, pkt: Packet): void {
    const o = this.options;
    let skip = false;
    let track: Track | undefined;
    switch (pkt.type) {
      case PacketType.Psb:
        if (o.trackTime) this.check("error calibrating time", offset, this.tcal.updatePsb());
        this.inHeader = true;
        break;
      case PacketType.PsbEnd:
        this.inHeader = false;
        break;
      case PacketType.Pad:
        skip = o.noPad;
        break;
      case PacketType.Ovf:
        if (o.trackTime) {
          if (o.keepTcalOnOvf) this.check("error calibrating time", offset, this.tcal.updateOvf());
          else this.tcal.reset();
        }
        break;
      case PacketType.Fup:
      case PacketType.Tip:
      case PacketType.TipPge:
      case PacketType.TipPgd:
        if (o.showLastIp) track = this.trackLastIp(offset, pkt);
        break;
      case PacketType.Pip:
        track = { id: "cr3", text: hex64(pkt.hi, pkt.lo) };
        break;
      case PacketType.Vmcs:
        track = { id: "vmcs", text: hex64(pkt.hi, pkt.lo) };
        break;
      case PacketType.ModeExec:
        if (o.showExecMode) track = { id: "em", text: execMode(pkt.flags) };
        break;
      case PacketType.Cfe:
        track = { id: "type", text: cfeTypeName(pkt.a) };
        break;
      case PacketType.Evd:
        track = { id: "type", text: evdTypeName(pkt.a) };
        break;
      case PacketType.Tsc:
      case PacketType.Cbr:
      case PacketType.Tma:
      case PacketType.Mtc:
        if (o.trackTime) track = this.trackTime(offset, pkt);
        skip = o.noTiming;
        break;
      case PacketType.Cyc:
        if (o.trackTime && !o.noCyc) track = this.trackTime(offset, pkt);
        skip = o.noTiming || o.noCyc;
        break;
    }
    if (skip || o.quiet) return;
    this.out.line(this.formatLine(bytes, offset, pkt, track));
  }

  private dumpAllSideband(): void {
    this.sideband?.dumpAll(this.options.sideband.print);
  }

  private formatLine(bytes: TraceBytes, offset: number, pkt: Packet, track: Track | undefined): string {
    const o = this.options;
    let line = "";
    let sep = "";
    if (o.showOffset) {
      line = (this.base + offset).toString(16).padStart(16, "0").padEnd(Width.offset);
      sep = " ";
    }
    if (o.showRaw) {
      let raw = "";
      const at = offset - bytes.base;
      for (let i = 0; i < pkt.size; i++) raw += bytes.buf[at + i]!.toString(16).padStart(2, "0");
      line += sep + fit(raw, Width.raw).padEnd(Width.raw);
      sep = " ";
    }
    const name = PACKET_NAMES[pkt.type]!;
    const extended = usesExtendedPayload(pkt.type);
    const payload = fit(payloadText(pkt), extended ? Width.extended : Width.payload);
    line += sep + (payload ? name.padEnd(Width.opcode) : name);
    if (track) {
      line += ` ${payload.padEnd(Width.payload)} ${fit(track.id, Width.trackId).padEnd(Width.trackId)}${fit(track.text, Width.track)}`;
    } else if (payload) {
      line += ` ${payload}`;
    }
    return line;
  }

  private check(what: string, offset: number, status: number): number {
    if (status < 0) this.diag(what, offset, status);
    return status;
  }

  private trackLastIp(offset: number, pkt: Packet): Track {
    const status = this.lastIp.update(pkt);
    if (status < 0) {
      this.diag("error tracking last-ip", offset, status);
      return { id: "ip", text: "<unavailable>" };
    }
    const ipStatus = this.lastIp.status();
    if (ipStatus === -ErrorCode.IpSuppressed) return { id: "ip", text: "<suppressed>" };
    if (ipStatus < 0) {
      this.diag("error tracking last-ip", offset, ipStatus);
      return { id: "ip", text: "<unavailable>" };
    }
    return { id: "ip", text: hex64(this.lastIp.hi, this.lastIp.lo) };
  }

  /** Update calibration and time from a timing packet, in ptdump's order, and describe the result. */
  private trackTime(offset: number, pkt: Packet): Track | undefined {
    const o = this.options;
    let showTime = o.showTime;
    let showTcal = o.showTcal;
    switch (pkt.type) {
      case PacketType.Tsc:
        if (!o.noTcal) {
          const s = this.inHeader ? this.tcal.headerTsc(pkt) : this.tcal.updateTsc(pkt);
          this.check("error calibrating time", offset, s);
        }
        this.check("error updating time", offset, this.time.updateTsc(pkt));
        break;
      case PacketType.Cbr:
        if (!o.noTcal) {
          const s = this.inHeader ? this.tcal.headerCbr(pkt) : this.tcal.updateCbr(pkt);
          this.check("error calibrating time", offset, s);
        }
        this.check("error updating time", offset, this.time.updateCbr(pkt));
        showTime = false;
        break;
      case PacketType.Tma:
        if (!o.noTcal) this.check("error calibrating time", offset, this.tcal.updateTma(pkt));
        this.check("error updating time", offset, this.time.updateTma(pkt));
        showTcal = false;
        break;
      case PacketType.Mtc:
        if (!o.noTcal) this.check("error calibrating time", offset, this.tcal.updateMtc(pkt));
        this.check("error updating time", offset, this.time.updateMtc(pkt));
        break;
      case PacketType.Cyc: {
        // Zero (no calibration) unless the calibrator has an fcr.
        const fcr = this.fcr.set(0, 0);
        if (!o.noTcal) {
          this.check("calibration error", offset, this.tcal.queryFcr(fcr));
          this.check("error calibrating time", offset, this.tcal.updateCyc(pkt));
        }
        const s = this.time.updateCyc(pkt, fcr);
        if (s < 0) this.diag("error updating time", offset, s);
        else if (fcr.hi === 0 && fcr.lo === 0) this.diag("error updating time: no calibration", offset, 0);
        showTcal = false;
        break;
      }
    }
    // ptdump fills the tcal column first and the time column over it.
    let track: Track | undefined;
    if (showTcal) track = this.tcalTrack(offset);
    if (showTime) track = this.timeTrack(offset);
    if (this.sideband) {
      // Records up to the current time, known or not (ptdump uses it either way).
      this.time.queryTsc(this.tsc);
      this.sideband.dump(this.options.sideband.print, this.tsc.tscHi, this.tsc.tscLo);
    }
    return track;
  }

  private tcalTrack(offset: number): Track {
    const fcr = this.fcr;
    const s = this.tcal.queryFcr(fcr);
    if (s < 0) {
      this.diag("error printing time", offset, s);
      return { id: "fcr", text: "<unavailable>" };
    }
    if (!this.options.timeDelta) return { id: "fcr", text: formatFcr(fcr) };
    const text = formatFcrDelta(fcr, this.prevFcr);
    this.prevFcr.copy(fcr);
    return { id: "fcr", text };
  }

  private timeTrack(offset: number): Track {
    const s = this.time.queryTsc(this.tsc);
    if (s < 0 && !(s === -ErrorCode.NoTime && this.options.noWallClock)) {
      this.diag("error printing time", offset, s);
      return { id: "tsc", text: "<unavailable>" };
    }
    const hi = this.tsc.tscHi;
    const lo = this.tsc.tscLo;
    if (!this.options.timeDelta) return { id: "tsc", text: hex64(hi, lo) };
    const prev = this.prevTsc;
    const back = lt64(hi, lo, prev.hi, prev.lo);
    const delta = this.tscDelta;
    if (back) sub64(delta, prev.hi, prev.lo, hi, lo);
    else sub64(delta, hi, lo, prev.hi, prev.lo);
    prev.set(hi, lo);
    return { id: "tsc", text: (back ? "-" : "+") + hex64(delta.hi, delta.lo, 1) };
  }
}

function execMode(flags: number): string {
  if (flags & Flag.CsL) return flags & Flag.CsD ? "unknown" : "64-bit";
  return flags & Flag.CsD ? "32-bit" : "16-bit";
}

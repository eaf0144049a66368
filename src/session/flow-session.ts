/**
 * ptxed's decode loop, shared by the instruction and the block decoder: synchronise,
 * report pending events, decode instructions or blocks until the trace ends or an
 * error stops them, report the error at its trace offset and go on at the next PSB
 * (or, with --resync-on-error, at the next event that tells where execution is).
 */
import type { PtEvent } from "../event/index.js";
import { Status } from "../event/index.js";
import type { Image } from "../image/index.js";
import { ErrorCode, errorMessage, hex64 } from "../packet/index.js";
import type { SidebandSession } from "../perf/index.js";
import { U64 } from "../time/index.js";
import { eventText } from "./flow-event-text.js";
import { diagText } from "./flow-text.js";
import type { CodeWalker } from "./flow-walk.js";
import type { LineWriter } from "./io.js";
import type { FlowOutput } from "./raw-options.js";
import type { SidebandOptions } from "./sideband-config.js";

/** The decoder calls the loop makes, common to InsnDecoder and BlockDecoder. */
export interface FlowDecoderCalls {
  syncForward(): number;
  resync(): number;
  event(ev: PtEvent): number;
  /** The trace offset of the decoder, or -error when it has none. */
  readonly offset: number;
  /** The offset of the last PSB synchronised to, or -error when there is none. */
  readonly syncOffset: number;
  /** The memory image decoded against (sideband switches it). */
  image: Image;
}

/** What differs between the decoders: the unit decoded, printed, counted and checked. */
export interface FlowUnit {
  readonly decoder: FlowDecoderCalls;
  /** Forget the last decoded unit (before synchronising). */
  reset(): void;
  /**
   * Decode, print, count and check one instruction or block (or more, while there is
   * nothing for the loop to do between them): status flags or -error.
   */
  decodeOne(): number;
  /** Report `code` at the IP ptxed blames for it (it depends on the unit). */
  diagnose(what: string, code: number): void;
}

export class FlowSession {
  /** The time of the last event (ptxed's `time`, printed with --time). */
  readonly time = new U64();
  insnCount = 0;
  blockCount = 0;
  /** Whether the trace holds no PSB at all (the first sync found none): likely not a trace. */
  noPsb = false;

  /**
   * Stop where the flow after the PSB at this offset (or one after it) begins: a
   * piece of the trace, see flow-pieces.ts; {@link stopped} then says so.
   */
  stop = Number.POSITIVE_INFINITY;
  stopped = false;
  /** The PSB whose status updates were handled at or past {@link stop} (the flow after them is past it), or -1. */
  private updatesAt = -1;
  /** Where the decode stopped: the PSB whose flow comes next; and whether the decoder had read no further. */
  stopPsb = -1;
  stopClean = true;
  /** Called at {@link stop}, when set: it may move `stop` on and return true to go on decoding. */
  onStop: ((psb: number, clean: boolean) => boolean) | undefined;
  /** Told of every decode error (the status that stopped a segment). */
  onError: ((code: number) => void) | undefined;

  /** What diagnostics' offsets are relative to: the trace offset of the decoder's first byte (a piece's start). */
  base = 0;

  /** The sideband every event is offered to (--pevent), with how its records print. */
  sideband: { session: SidebandSession; options: SidebandOptions } | undefined;

  constructor(
    readonly out: FlowOutput,
    readonly lines: LineWriter,
    private readonly event: PtEvent,
  ) {}

  /** ptxed's `diagnose`: `[offset, ip: what: error]`, with `?` when the offset is unknown. */
  diag(decoder: FlowDecoderCalls, ipHi: number, ipLo: number, what: string, code: number): void {
    const offset = decoder.offset;
    if (offset < 0) {
      this.lines.line(`could not determine offset: ${errorMessage(offset)}`);
      this.lines.line(`[?, ${hex64(ipHi, ipLo, 1)}: ${what}: ${errorMessage(code)}]`);
    } else {
      this.lines.line(diagText(this.base + offset, ipHi, ipLo, what, code));
    }
  }

  /** Decode the whole trace with `unit`. */
  run(unit: FlowUnit): void {
    const dec = unit.decoder;
    let sync = 0;
    for (let first = true; ; first = false) {
      unit.reset();
      let status = dec.syncForward();
      if (status >= 0 && dec.syncOffset >= this.stop && this.atStop(dec.syncOffset, true)) return;
      if (status < 0) {
        if (status === -ErrorCode.Eos) {
          // (The trace may also end in the first PSB+.)
          this.noPsb = first && dec.syncOffset < 0;
          return;
        }
        unit.diagnose("sync error", status);
        // No progress means there will be none: give up (ptxed reports twice first).
        const at = dec.offset;
        if (at < 0 || at <= sync) return;
        sync = at;
        continue;
      }
      for (;;) {
        status = this.decodeSegment(unit, status);
        if (status === -ErrorCode.Eos || this.stopped) return;
        this.onError?.(status);
        unit.diagnose("error", status);
        if (!this.out.resyncOnError) break;
        status = this.resync(dec);
        if (status < 0) {
          unit.diagnose("resync error", status);
          break;
        }
        // Go on from where resync put the decoder.
      }
    }
  }

  /**
   * What a unit does before it decodes: hands `walker` the decoder's image where the
   * walker reads code (the listing, --check; the analysis feed takes the image itself),
   * and reads the decoder's offset where it is printed or checked. The offset (0 when
   * not needed), or -error.
   */
  unitStart(decoder: FlowDecoderCalls, walker: CodeWalker): number {
    const o = this.out;
    if (!o.quiet || o.check) walker.use(decoder.image);
    return o.offset || o.check ? decoder.offset : 0;
  }

  /**
   * Events and units until an error or the end: the negative status that stopped it
   * (-Eos at the end of the trace).
   */
  private decodeSegment(unit: FlowUnit, status: number): number {
    const dec = unit.decoder;
    for (;;) {
      status = this.drainEvents(dec, status);
      if (this.stopped) return -ErrorCode.Eos;
      if (status >= 0 && this.updatesAt >= 0 && this.stopAfterUpdates(dec)) return -ErrorCode.Eos;
      if (status < 0) return status;
      if (status & Status.Eos) {
        if (!(status & Status.IpSuppressed) && !this.out.quiet) this.lines.line("[end of trace]");
        return -ErrorCode.Eos;
      }
      status = unit.decodeOne();
      if (status < 0) return status;
    }
  }

  /** At {@link stop}, before the flow after the PSB at `psb`: whether decoding stops there. */
  private atStop(psb: number, clean: boolean): boolean {
    this.updatesAt = -1;
    if (this.onStop?.(psb, clean)) return false;
    this.stopped = true;
    this.stopPsb = psb;
    this.stopClean = clean;
    return true;
  }

  private stopAfterUpdates(dec: FlowDecoderCalls): boolean {
    return this.atStop(this.updatesAt, dec.syncOffset === this.updatesAt);
  }

  private drainEvents(dec: FlowDecoderCalls, status: number): number {
    while (status & Status.EventPending) {
      status = this.handleEvent(dec);
      if (this.stopped) return status;
      if (status < 0) break;
    }
    return status;
  }

  /** Fetch and print one event; its time becomes the current time. */
  private handleEvent(dec: FlowDecoderCalls): number {
    let offset = 0;
    if (this.out.offset) {
      offset = dec.offset;
      if (offset < 0) return offset;
    }
    const ev = this.event;
    const status = dec.event(ev);
    if (status < 0) return status;
    if (this.updatesAt >= 0) {
      if (!ev.statusUpdate && this.stopAfterUpdates(dec)) return status;
    } else if (ev.psbOffset >= this.stop) {
      // A piece ends after the status updates of the PSB that starts the next (they
      // print nothing; the instructions and events before them, up to the IP of its
      // FUP, are this piece's), at the first other event or instruction.
      this.updatesAt = ev.psbOffset;
    }
    this.time.set(ev.tscHi, ev.tscLo);
    if (!this.out.quiet && !ev.statusUpdate) this.lines.line(eventText(ev, this.out, offset));
    const sb = this.sideband;
    if (sb) {
      // Records due by now print and apply; a primary channel may switch the image.
      sb.session.event(ev, sb.options.print);
      if (sb.session.image) dec.image = sb.session.image;
    }
    return status;
  }

  /** Resynchronise, reporting the events without IP the decoder hands back on the way. */
  private resync(dec: FlowDecoderCalls): number {
    let status: number;
    for (;;) {
      status = dec.resync();
      if (status >= 0) break;
      if (status !== -ErrorCode.EventIgnored) return status;
      status = this.handleEvent(dec);
      if (status < 0) return status;
    }
    if (status & Status.IpSuppressed && !this.out.quiet) this.lines.line("[disabled]");
    return status;
  }
}

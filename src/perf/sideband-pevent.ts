/**
 * A pevent sideband channel (libipt-sb's perf_event decoder): reads the records of one
 * stream in order, says when each is due in TSC, and applies them to the session's
 * process contexts (fork, exec, mmap, context switches, losses). A primary channel also
 * switches the decoder's image: at once on ITRACE_START, otherwise postponed until the
 * trace is (likely) in the kernel, where a context switch can happen.
 */
import { EventType, type PtEvent } from "../event/index.js";
import { ErrorCode, splitBigInt } from "../packet/index.js";
import { lt64, U64 } from "../time/index.js";
import { copySections, type SidebandContext } from "./sideband-context.js";
import { type PeventRecord, readPevent } from "./sideband-record.js";
import type { TscConversion } from "./time-conv.js";
import { AuxFlag, Misc, RecordType } from "./types.js";

/** What a pevent channel is configured with (ptxed's and ptdump's --pevent:* options). */
export interface PeventConfig {
  /** The name shown with records and diagnostics. */
  filename: string;
  /** The stream's bytes (the file, or the part of it the range selects). */
  bytes: Uint8Array;
  /** Whether this channel switches the decoder's image (--pevent:primary). */
  primary: boolean;
  sampleType: number;
  /** Sample types by identifier (--pevent:sample-config), for streams of several events. */
  sampleConfig?: ReadonlyMap<bigint, number>;
  conversion: TscConversion;
  /** Subtracted from every record's TSC, so that records apply earlier (may be "negative", as a u64). */
  tscOffset: bigint;
  /** Addresses from here up are the kernel's (2^64 - 1 when ring 0 is not traced). */
  kernelStart: bigint;
  /** Put before every file name the records give. */
  sysroot: string | undefined;
  vdsoX64: string | undefined;
  vdsoX32: string | undefined;
  vdsoIa32: string | undefined;
}

/** libipt-sb's warnings (positive codes, next to the negative ErrorCodes). */
export const SidebandWarning = { Lost: 1, TraceLost: 2, SectionLost: 3 } as const;

const WARNING_TEXT = ["OK", "sideband lost", "trace lost", "image section lost"];

/** The text of a sideband warning. */
export function sidebandWarningText(code: number): string {
  return WARNING_TEXT[code] ?? "bad errcode";
}

/** Where the trace is, as far as events tell. */
const Location = { Unknown: 0, Kernel: 1, User: 2, LikelyKernel: 3, LikelyUser: 4 } as const;
type Location = (typeof Location)[keyof typeof Location];

/** What a channel needs from its session. */
export interface PeventHost {
  /** Report `code` (a negative ErrorCode or a {@link SidebandWarning}) at a stream offset. */
  error(code: number, filename: string, offset: number): void;
  /** The context of `pid`, made (from the kernel image) when there is none. */
  context(pid: number): SidebandContext;
  /** The context of `pid`, or undefined. */
  findContext(pid: number): SidebandContext | undefined;
  /** Forget the context of `pid` (whoever uses its image keeps it). */
  removeContext(pid: number): void;
  /** Map a file named by a record into `context` (sysroot and vdso already resolved). */
  mmap(context: SidebandContext, path: string, offset: bigint, size: bigint, vaddr: bigint): number;
  /** Install `context`'s image as the decoder's. */
  switchTo(context: SidebandContext): void;
}

export class PeventChannel {
  /** The current record and its stream offset (-1 before the first fetch). */
  record: PeventRecord | undefined;
  offset = -1;
  /** When the current record is due. */
  readonly tsc = new U64();
  private next = 0;
  private context: SidebandContext | undefined;
  private nextContext: SidebandContext | undefined;
  private location: Location = Location.Unknown;
  private readonly kernelStart = new U64();

  constructor(
    readonly config: PeventConfig,
    private readonly host: PeventHost,
  ) {
    splitBigInt(config.kernelStart, this.kernelStart);
  }

  get primary(): boolean {
    return this.config.primary;
  }

  /** Whether the current record was the stream's last (nothing left to fetch). */
  get drained(): boolean {
    return this.offset === this.next;
  }

  /** Read the next record: 0, -Eos at the end, or another -error (reported). */
  fetch(): number {
    const c = this.config;
    this.offset = this.next;
    const rec = readPevent(c.bytes, this.next, c.bytes.length, c.sampleType, c.conversion, c.sampleConfig);
    if (typeof rec === "number") {
      if (rec !== -ErrorCode.Eos) this.report(rec);
      return rec;
    }
    this.next += rec.size;
    this.record = rec;
    if (rec.samples.time !== undefined) rec.tsc = applyOffset(rec.tsc, c.tscOffset);
    splitBigInt(rec.tsc, this.tsc);
    return 0;
  }

  /**
   * Offer the channel `ev`: applies the current record when it is due (the session then
   * fetches the next), else tracks the location and makes a postponed context switch.
   * Returns 0, or -Eos when the stream is done and no switch is pending.
   */
  apply(ev: PtEvent): number {
    const rec = this.record;
    if (
      rec &&
      !this.drained &&
      (rec.samples.time === undefined || !lt64(ev.tscHi, ev.tscLo, this.tsc.hi, this.tsc.lo))
    ) {
      const status = this.applyRecord(rec);
      if (status !== 0) this.report(status);
      return 0;
    }
    const old = this.location;
    this.location = this.locate(ev);
    if (!this.nextContext) return this.drained ? -ErrorCode.Eos : 0;
    if (mayBeKernel(old) || mayBeKernel(this.location)) this.switchContexts();
    return 0;
  }

  private report(code: number): void {
    this.host.error(code, this.config.filename, Math.max(this.offset, 0));
  }

  /** Apply a due record: 0, or what to report (a negative ErrorCode or a SidebandWarning). */
  private applyRecord(rec: PeventRecord): number {
    const f = rec.fields;
    const primary = this.primary;
    switch (rec.type) {
      case RecordType.ItraceStart:
        // Tracing just started: no need to wait for the kernel.
        if (!primary) return 0;
        this.prepareSwitch(Number(f.pid));
        this.switchContexts();
        return 0;
      case RecordType.Fork:
        return this.fork(Number(f.pid), Number(f.ppid), Number(f.tid));
      case RecordType.Comm: {
        if (!(rec.misc & Misc.CommExec)) return 0;
        // A new context rather than a changed one: the old image is in use until the switch.
        this.host.removeContext(Number(f.pid));
        const context = this.host.context(Number(f.pid));
        if (primary) this.prepareSwitchTo(context);
        return 0;
      }
      case RecordType.Switch:
        if (!primary || rec.misc & Misc.SwitchOut) return 0;
        if (rec.samples.pid === undefined) return -ErrorCode.BadConfig;
        this.prepareSwitch(rec.samples.pid);
        return 0;
      case RecordType.SwitchCpuWide:
        if (!primary) return 0;
        if (rec.misc & Misc.SwitchOut) this.prepareSwitch(Number(f.nextPrevPid));
        else if (rec.samples.pid !== undefined) this.prepareSwitch(rec.samples.pid);
        return 0;
      case RecordType.Mmap:
      case RecordType.Mmap2:
        // Kernel mmaps are left alone: ring-0 code comes from the kernel image (kcore).
        if ((rec.misc & Misc.CpuModeMask) === Misc.Kernel) return 0;
        return this.map(Number(f.pid), String(f.filename), BigInt(f.pgoff!), BigInt(f.len!), BigInt(f.addr!));
      case RecordType.Lost:
        return SidebandWarning.Lost;
      case RecordType.Aux:
        return primary && BigInt(f.flags!) & BigInt(AuxFlag.Truncated) ? SidebandWarning.TraceLost : 0;
    }
    return 0;
  }

  private fork(pid: number, ppid: number, tid: number): number {
    // A new thread needs nothing; a new process starts with its parent's image.
    if (ppid === pid) return 0;
    if (pid !== tid) return -ErrorCode.Internal;
    this.host.removeContext(pid);
    const child = this.host.context(pid);
    const parent = this.host.findContext(ppid);
    if (parent) copySections(child.image, parent.image);
    return 0;
  }

  private map(pid: number, filename: string, offset: bigint, size: bigint, vaddr: bigint): number {
    const c = this.config;
    const context = this.host.context(pid);
    let path = filename;
    if (filename.startsWith("[")) {
      if (filename !== "[vdso]") return SidebandWarning.SectionLost;
      const vdso = [undefined, c.vdsoX64, c.vdsoX32, c.vdsoIa32][context.abi];
      if (vdso === undefined) return -ErrorCode.BadConfig;
      path = vdso;
    } else if (filename === "//anon" || filename.includes(" (deleted)")) {
      // JIT code and deleted files: nothing to map.
      return SidebandWarning.SectionLost;
    } else if (c.sysroot !== undefined) {
      path = c.sysroot + filename;
    }
    return Math.min(this.host.mmap(context, path, offset, size, vaddr), 0);
  }

  private prepareSwitch(pid: number): void {
    this.prepareSwitchTo(this.host.context(pid));
  }

  private prepareSwitchTo(context: SidebandContext): void {
    if (this.nextContext === context) return;
    this.nextContext = undefined;
    if (this.context === context) return;
    this.nextContext = context;
  }

  private switchContexts(): void {
    const next = this.nextContext;
    if (!next) return;
    this.host.switchTo(next);
    this.nextContext = undefined;
    this.context = next;
  }

  private locate(ev: PtEvent): Location {
    switch (ev.type) {
      case EventType.Enabled:
      case EventType.AsyncBranch:
      case EventType.Tip:
        return this.at(ev.ipHi, ev.ipLo);
      case EventType.Disabled:
        return ev.ipSuppressed ? fromSuppressed(this.location) : this.at(ev.ipHi, ev.ipLo);
      case EventType.AsyncDisabled:
        return ev.ipSuppressed ? fromSuppressed(this.at(ev.fromHi, ev.fromLo)) : this.at(ev.ipHi, ev.ipLo);
      case EventType.AsyncPaging:
        return ev.ipSuppressed ? Location.LikelyKernel : this.at(ev.ipHi, ev.ipLo);
      case EventType.Paging:
        return Location.LikelyKernel;
      case EventType.Overflow:
      case EventType.ExecMode:
      case EventType.Tsx:
      case EventType.Exstop:
      case EventType.Mwait:
      case EventType.Ptwrite:
      case EventType.Tick:
      case EventType.Iflags:
      case EventType.Interrupt:
      case EventType.Iret:
      case EventType.Smi:
      case EventType.Rsm:
      case EventType.Init:
      case EventType.Vmentry:
      case EventType.Vmexit:
      case EventType.Shutdown:
      case EventType.Uintr:
      case EventType.Uiret:
        return ev.ipSuppressed ? Location.Unknown : this.at(ev.ipHi, ev.ipLo);
    }
    return Location.Unknown;
  }

  private at(hi: number, lo: number): Location {
    return lt64(hi, lo, this.kernelStart.hi, this.kernelStart.lo) ? Location.User : Location.Kernel;
  }
}

function mayBeKernel(loc: Location): boolean {
  return loc === Location.Kernel || loc === Location.LikelyKernel || loc === Location.Unknown;
}

function fromSuppressed(from: Location): Location {
  switch (from) {
    case Location.Kernel:
    case Location.LikelyKernel:
      return Location.LikelyUser;
    case Location.User:
    case Location.LikelyUser:
      return Location.LikelyKernel;
  }
  return Location.Unknown;
}

/**
 * `tsc - offset`, kept from wrapping below 0: a positive offset larger than `tsc` gives
 * 0; a "negative" one (as a u64, top bit set) adds its magnitude.
 */
function applyOffset(tsc: bigint, offset: bigint): bigint {
  if (offset <= tsc) return tsc - offset;
  if (offset < 1n << 63n) return 0n;
  return BigInt.asUintN(64, tsc - offset);
}

/**
 * A sideband session (libipt-sb's pt_sb_session) for one trace decoder: its pevent
 * channels ordered by when their next record is due, the process contexts they
 * maintain, and the kernel image every new context starts from. ptdump's use: print
 * records up to a time ({@link dump}); ptxed's: offer each decoder event, which prints
 * and applies due records and may switch the decoder's image ({@link event}).
 */
import type { PtEvent } from "../event/index.js";
import { Image } from "../image/index.js";
import { ErrorCode, splitBigInt } from "../packet/index.js";
import { lt64, U64 } from "../time/index.js";
import { Abi, elfAbi, SidebandContext } from "./sideband-context.js";
import { PeventChannel, type PeventConfig, type PeventHost } from "./sideband-pevent.js";
import { type SidebandFormat, sidebandRecordText } from "./sideband-text.js";

/** How records are printed (ptdump's and ptxed's --sb:* options); format 0 prints nothing. */
export interface SidebandPrint {
  format: SidebandFormat | 0;
  filename: boolean;
  offset: boolean;
  time: boolean;
}

/** What a session needs from its surroundings. */
export interface SidebandHost {
  /** Print a record's text (may span lines; no final newline). */
  print(text: string): void;
  /** Report `code` (a negative ErrorCode or a SidebandWarning) at `offset` in `filename`. */
  error(code: number, filename: string, offset: number): void;
  /** The bytes of a file a record names, or undefined when it cannot be read. */
  readFile(path: string): Uint8Array | undefined;
  /** Called with the context's name when a primary channel switches images (ptxed --sb:switch). */
  switched?(name: string): void;
}

export class SidebandSession {
  /** Set by {@link event} when a primary channel switched the decoder's image. */
  image: Image | undefined;
  private waiting: PeventChannel[] = [];
  /** Channels with a record, by its due time; one (re)inserted goes before those due at the same time. */
  private active: PeventChannel[] = [];
  /** Channels whose stream ended: still offered events (a context switch may be pending). */
  private retired: PeventChannel[] = [];
  private readonly contexts = new Map<number, SidebandContext>();
  private readonly channelHost: PeventHost;
  private readonly max = new U64().set(0xffffffff, 0xffffffff);

  /**
   * @param kernel the image every new process context starts from (ptxed's
   *   --pevent:kcore); it should not change once contexts exist.
   */
  constructor(
    private readonly host: SidebandHost,
    readonly kernel: Image = new Image("kernel"),
  ) {
    this.channelHost = {
      error: (code, filename, offset) => host.error(code, filename, offset),
      context: (pid) => this.context(pid),
      findContext: (pid) => this.contexts.get(pid),
      removeContext: (pid) => {
        this.contexts.delete(pid);
      },
      mmap: (context, path, offset, size, vaddr) => this.mmap(context, path, offset, size, vaddr),
      switchTo: (context) => {
        this.host.switched?.(context.image.name);
        this.image = context.image;
      },
    };
  }

  /** Add a pevent channel; it starts reading at {@link init}. */
  addPevent(config: PeventConfig): void {
    this.waiting.unshift(new PeventChannel(config, this.channelHost));
  }

  /** Fetch the first record of every channel added since the last call (a channel that fails is dropped). */
  init(): void {
    for (const ch of this.waiting) if (ch.fetch() >= 0) this.insert(ch);
    this.waiting = [];
  }

  /** Print (per `print`) every record due at or before (hi:lo); a channel that ends or fails is dropped. */
  dump(print: SidebandPrint, hi: number, lo: number): void {
    for (;;) {
      const ch = this.active[0];
      if (!ch || lt64(hi, lo, ch.tsc.hi, ch.tsc.lo)) return;
      this.active.shift();
      this.printRecord(ch, print);
      if (ch.fetch() >= 0) this.insert(ch);
    }
  }

  /** Print every record left. */
  dumpAll(print: SidebandPrint): void {
    this.dump(print, this.max.hi, this.max.lo);
  }

  /**
   * Offer a decoder event: records due by its time are printed and applied in time
   * order, then every channel sees the event (postponed context switches happen
   * here). Afterwards {@link image} is the image to switch to, if any.
   */
  event(ev: PtEvent, print: SidebandPrint): void {
    this.image = undefined;
    for (;;) {
      const ch = this.active[0];
      if (!ch || lt64(ev.tscHi, ev.tscLo, ch.tsc.hi, ch.tsc.lo)) break;
      this.active.shift();
      this.printRecord(ch, print);
      ch.apply(ev);
      const status = ch.fetch();
      if (status >= 0) this.insert(ch);
      else if (status === -ErrorCode.Eos) this.retired.push(ch);
    }
    // Channels holding a record not yet due never end here; ended ones leave once nothing is pending.
    for (const ch of this.active) ch.apply(ev);
    const retired = this.retired;
    for (let i = 0; i < retired.length; ) {
      if (retired[i]!.apply(ev) === -ErrorCode.Eos) retired.splice(i, 1);
      else i++;
    }
  }

  private insert(ch: PeventChannel): void {
    let i = 0;
    while (
      i < this.active.length &&
      lt64(this.active[i]!.tsc.hi, this.active[i]!.tsc.lo, ch.tsc.hi, ch.tsc.lo)
    )
      i++;
    this.active.splice(i, 0, ch);
  }

  private printRecord(ch: PeventChannel, print: SidebandPrint): void {
    const rec = ch.record;
    if (!rec) return;
    let text = "";
    const offset = ch.offset.toString(16).padStart(16, "0");
    if (print.filename && print.offset) text = `${ch.config.filename}:${offset}  `;
    else if (print.filename) text = `${ch.config.filename}  `;
    else if (print.offset) text = `${offset}  `;
    if (print.time && rec.samples.time !== undefined) text += `${rec.tsc.toString(16).padStart(16, "0")}  `;
    if (print.format) text += sidebandRecordText(rec, print.format);
    if (print.format || print.filename || print.offset || print.time) this.host.print(text);
  }

  private context(pid: number): SidebandContext {
    let context = this.contexts.get(pid);
    if (!context) {
      context = new SidebandContext(pid, this.kernel);
      this.contexts.set(pid, context);
    }
    return context;
  }

  private mmap(context: SidebandContext, path: string, offset: bigint, size: bigint, vaddr: bigint): number {
    const bytes = this.host.readFile(path);
    if (!bytes) return -ErrorCode.BadFile;
    if (context.abi === Abi.Unknown) context.abi = elfAbi(bytes);
    // Like libipt: an offset past the file fails, a size past it is cut.
    const fileSize = BigInt(bytes.length);
    if (offset >= fileSize) return -ErrorCode.Invalid;
    const n = size < fileSize - offset ? size : fileSize - offset;
    const at = splitBigInt(vaddr, { hi: 0, lo: 0 });
    const status = context.image.addSection(path, bytes, Number(offset), Number(n), at.hi, at.lo);
    return Math.min(status, 0);
  }
}

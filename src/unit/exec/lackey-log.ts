/**
 * A streaming scanner for the log of `valgrind -v -v --trace-signals=yes --tool=lackey
 * --trace-mem=yes`: it finds, in order, the lines that say what the program did and
 * hands them to a {@link LackeyLogSink}. Everything else in the log is skipped.
 *
 * | line                                                | means |
 * |-----------------------------------------------------|-------|
 * | `I  0401ab70,3`                                     | an instruction executed at 0x401ab70, 3 bytes long (lackey) |
 * | ` S 1fff000778,8`, ` L ...`, ` M ...`               | the data accesses of the instruction line above: store, load, modify (8 bytes at 0x1fff000778) |
 * | `--PID-- Reading syms from /usr/lib/.../libc.so.6`  | valgrind loads an object's symbols (`-v -v`) ... |
 * | `--PID--    svma 0x0000026380, avma 0x000486b380`   | ... whose `.text` is linked at svma and mapped at avma |
 * | `--PID-- push_signal_frame (thread 1): signal 14`   | a signal is delivered (`--trace-signals=yes`) ... |
 * | `==PID==    at 0x1091E4: main (in ...)`             | ... and execution resumes there after the handler |
 *
 * Why this method: valgrind maps the program, its interpreter and libraries itself (at
 * addresses of its own choosing, 0x108000 for a PIE, 0x4000000 for ld.so), and its
 * `-v -v` output states, for every ELF object it reads symbols from, the address its
 * `.text` was linked at and the address it is mapped at; their difference is the load
 * bias of the whole object (dlopen'ed ones included, at the moment they appear). No
 * /proc access and no second run are needed, and the log stays one ordered stream.
 *
 * Input arrives in chunks of any size ({@link LackeyLogScanner.push}); a line split
 * between chunks is carried over (at most {@link MAX_LINE} bytes; a longer line is
 * skipped and counted). Instruction lines are parsed from the bytes without making
 * strings; only the rare `--`/`==` lines are decoded. Nothing here throws.
 */

/** Longest line kept across chunks; longer ones are skipped (lackey's are ~20 bytes). */
export const MAX_LINE = 1 << 16;

/** Where a line starts: its number (1-based) and byte offset in the log. */
export interface LinePos {
  line: number;
  offset: number;
}

/** What the scanner reports, in log order. */
export interface LackeyLogSink {
  /** An instruction line. `pos` is the scanner's own record, valid during the call. */
  insn(ipHi: number, ipLo: number, size: number, pos: LinePos): void;
  /** An object mapped with load bias `biasHi:biasLo` (avma - svma modulo 2^64). */
  object(path: string, biasHi: number, biasLo: number, pos: LinePos): void;
  /** A signal delivered; execution resumes at `resumeHi:resumeLo` when the handler returns. */
  signal(signo: number, resumeHi: number, resumeLo: number, pos: LinePos): void;
  /**
   * A data access of the last instruction: `write` for S and M lines. Optional: the
   * lines are not parsed for a sink without it (or when the scanner is told not to).
   */
  data?(write: boolean, hi: number, lo: number, size: number, pos: LinePos): void;
  /** A line that looks like one of ours but is not well formed. */
  malformed(reason: string, pos: LinePos): void;
}

const NL = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const COMMA = 0x2c;
const I = 0x49;
const L = 0x4c;
const S = 0x53;
const M = 0x4d;
const DASH = 0x2d;
const EQ = 0x3d;

const SYMS = /^--\d+--\s+Reading syms from (.+)$/;
const SVMA = /^--\d+--\s+svma 0x([0-9a-fA-F]{1,16}), avma 0x([0-9a-fA-F]{1,16})$/;
const SIGNAL_FRAME = /^--\d+--\s+push_signal_frame \(thread \d+\): signal (\d+)$/;
const RESUME_AT = /^==\d+==\s+at 0x([0-9a-fA-F]{1,16}):/;

/** Hex digit value, or -1. */
function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}

/** A hex string of at most 16 digits as halves. */
function hexHalves(text: string): [number, number] {
  const lo = Number.parseInt(text.slice(-8), 16);
  const hi = text.length > 8 ? Number.parseInt(text.slice(0, -8), 16) : 0;
  return [hi >>> 0, lo >>> 0];
}

export class LackeyLogScanner {
  /** Lines seen so far. */
  lines = 0;
  /** Lines longer than {@link MAX_LINE}, skipped. */
  longLines = 0;
  private offset = 0;
  private readonly pos: LinePos = { line: 0, offset: 0 };
  private carry = new Uint8Array(256);
  private carryLen = 0;
  /** The carried line grew past MAX_LINE: drop the rest of it. */
  private dropping = false;
  private readonly decoder = new TextDecoder();
  /** The object named by the last "Reading syms" line. */
  private pendingObject: string | null = null;
  /** Whether its svma line has been seen. */
  private objectMapped = false;
  /** The signal of the last push_signal_frame line, until its "at" line; else -1. */
  private pendingSignal = -1;

  /** `data`: parse data lines for the sink's {@link LackeyLogSink.data} (default: if it has one). */
  constructor(
    private readonly sink: LackeyLogSink,
    private readonly data = sink.data !== undefined,
  ) {}

  /** Scan the next bytes of the log. */
  push(chunk: Uint8Array): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NL, start);
      if (nl < 0) break;
      if (this.carryLen > 0 || this.dropping) {
        this.appendCarry(chunk, start, nl);
        this.completeLine(this.carry, 0, this.carryLen);
      } else {
        this.completeLine(chunk, start, nl);
      }
      start = nl + 1;
    }
    if (start < chunk.length) this.appendCarry(chunk, start, chunk.length);
  }

  /** The log ended: scan a last line without a newline (lackey's last line when it was killed). */
  end(): void {
    if (this.carryLen > 0 || this.dropping) this.completeLine(this.carry, 0, this.carryLen);
  }

  /** A whole line is in buf[from, to) (or was too long: `dropping`); scan it and move on. */
  private completeLine(buf: Uint8Array, from: number, to: number): void {
    this.lines++;
    const length = this.dropping ? this.carryLen : to - from;
    if (this.dropping) this.longLines++;
    else this.line(buf, from, to);
    this.offset += length + 1;
    this.carryLen = 0;
    this.dropping = false;
  }

  private appendCarry(chunk: Uint8Array, from: number, to: number): void {
    const need = this.carryLen + (to - from);
    if (this.dropping || need > MAX_LINE) {
      // Only the length of an over-long line is kept, for the offsets of later lines.
      this.dropping = true;
      this.carryLen = need;
      return;
    }
    if (need > this.carry.length) {
      const bigger = new Uint8Array(Math.min(MAX_LINE, Math.max(need, this.carry.length * 2)));
      bigger.set(this.carry.subarray(0, this.carryLen));
      this.carry = bigger;
    }
    this.carry.set(chunk.subarray(from, to), this.carryLen);
    this.carryLen = need;
  }

  /** One line, bytes [from, to) of buf without its newline. */
  private line(buf: Uint8Array, from: number, to: number): void {
    const pos = this.pos;
    pos.line = this.lines;
    pos.offset = this.offset;
    if (to > from && buf[to - 1] === CR) to--;
    if (to - from < 2) return;
    const c = buf[from];
    if (c === I && buf[from + 1] === SPACE) this.accessLine(buf, from + 2, to, pos, -1);
    else if (c === SPACE && this.data && to - from > 3 && buf[from + 2] === SPACE) {
      const k = buf[from + 1];
      if (k === L || k === S || k === M) this.accessLine(buf, from + 3, to, pos, k === L ? 0 : 1);
    } else if ((c === DASH && buf[from + 1] === DASH) || (c === EQ && buf[from + 1] === EQ))
      this.messageLine(this.decoder.decode(buf.subarray(from, to)), pos);
  }

  /**
   * `I  hex,dec` from the first byte after "I " (`write` < 0), or a data line's
   * `hex,dec` after " L ", " S " or " M " (`write` 0 for loads, 1 for stores and modifies).
   */
  private accessLine(buf: Uint8Array, at: number, to: number, pos: LinePos, write: number): void {
    while (at < to && buf[at] === SPACE) at++;
    let hi = 0;
    let lo = 0;
    let digits = 0;
    for (; at < to; at++) {
      const d = hexDigit(buf[at]!);
      if (d < 0) break;
      hi = ((hi << 4) | (lo >>> 28)) >>> 0;
      lo = ((lo << 4) | d) >>> 0;
      digits++;
    }
    if (digits === 0 || digits > 16 || at >= to || buf[at] !== COMMA) {
      this.sink.malformed(`expected '${write < 0 ? "I " : "L"} <hex address>,<size>'`, pos);
      return;
    }
    at++;
    let size = 0;
    let sizeDigits = 0;
    for (; at < to; at++) {
      const c = buf[at]!;
      if (c < 0x30 || c > 0x39) break;
      size = size * 10 + (c - 0x30);
      sizeDigits++;
      if (sizeDigits > 3) break;
    }
    if (sizeDigits === 0 || sizeDigits > 3 || at !== to) {
      this.sink.malformed(
        `expected a decimal ${write < 0 ? "instruction" : "access"} size after the comma`,
        pos,
      );
      return;
    }
    if (write < 0) this.sink.insn(hi, lo, size, pos);
    else this.sink.data!(write === 1, hi, lo, size, pos);
  }

  private messageLine(text: string, pos: LinePos): void {
    if (this.pendingSignal >= 0) {
      const at = RESUME_AT.exec(text);
      if (at) {
        const [hi, lo] = hexHalves(at[1]!);
        const signo = this.pendingSignal;
        this.pendingSignal = -1;
        this.sink.signal(signo, hi, lo, pos);
        return;
      }
    }
    if (text.charCodeAt(0) !== DASH) return;
    const syms = SYMS.exec(text);
    if (syms) {
      this.pendingObject = syms[1]!;
      this.objectMapped = false;
      return;
    }
    const svma = SVMA.exec(text);
    if (svma) {
      const path = this.pendingObject;
      if (path === null) {
        this.sink.malformed("an svma/avma line without a 'Reading syms from' line before it", pos);
        return;
      }
      // Objects with several code segments get a line each: the first gives the bias.
      if (this.objectMapped) return;
      this.objectMapped = true;
      const [sHi, sLo] = hexHalves(svma[1]!);
      const [aHi, aLo] = hexHalves(svma[2]!);
      const borrow = aLo < sLo ? 1 : 0;
      this.sink.object(path, (aHi - sHi - borrow) >>> 0, (aLo - sLo) >>> 0, pos);
      return;
    }
    const frame = SIGNAL_FRAME.exec(text);
    if (frame) this.pendingSignal = Number(frame[1]);
  }
}

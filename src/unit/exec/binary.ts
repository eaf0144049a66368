/**
 * The compact binary form of executions (format in types.ts): about 3 bytes per
 * instruction that follows its predecessor, 11 for one that does not. Reading and
 * writing are API edges: errors throw {@link PtError} (`BadFile`) with the byte offset
 * of the offending record.
 */

import { ErrorCode, PtError } from "../../base/errors.js";
import { InsnFlag } from "../../isa/types.js";
import {
  EVENT_FIELDS,
  EventField,
  ExecBuilder,
  type Execution,
  INFO_CLASS_SHIFT,
  INFO_ZLC,
  infoClass,
  infoSize,
} from "./types.js";

/** "PTKEXEC" and the format version. */
const MAGIC = [0x50, 0x54, 0x4b, 0x45, 0x58, 0x45, 0x43];
const VERSION = 1;
const HEADER = MAGIC.length + 1;
const TAG_NEXT = 0x00;
const TAG_AT = 0x01;
const TAG_EVENT = 0x10;
/** The bits an info word may use: size 3:0, class 8:4, zero-length call 9. */
const INFO_DEFINED = INFO_ZLC | (0x1f << INFO_CLASS_SHIFT) | 0xf;

/** Bytes of an event's fields after its tag. */
function eventBytes(kind: number): number {
  const used = EVENT_FIELDS[kind]!;
  return (
    (used & EventField.A ? 4 : 0) +
    (used & EventField.B ? 4 : 0) +
    (used & EventField.Value ? 8 : 0) +
    (used & EventField.To ? 8 : 0)
  );
}

/** Whether instruction i starts where instruction i-1 ends (the first: at 0). */
function follows(x: Execution, i: number): boolean {
  if (i === 0) return x.ipHi[0] === 0 && x.ipLo[0] === 0;
  const end = x.ipLo[i - 1]! + infoSize(x.info[i - 1]!);
  const hi = (x.ipHi[i - 1]! + (end >= 2 ** 32 ? 1 : 0)) >>> 0;
  return x.ipLo[i] === end >>> 0 && x.ipHi[i] === hi;
}

class Writer {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  u8(v: number): void {
    this.buf[this.pos++] = v;
  }

  u16(v: number): void {
    this.u8(v & 0xff);
    this.u8(v >>> 8);
  }

  u32(v: number): void {
    this.u16(v & 0xffff);
    this.u16(v >>> 16);
  }

  u64(hi: number, lo: number): void {
    this.u32(lo);
    this.u32(hi);
  }
}

/** The execution in the binary form. */
export function writeExecBinary(x: Execution): Uint8Array {
  let size = HEADER;
  for (let i = 0; i < x.insnCount; i++) size += follows(x, i) ? 3 : 11;
  for (let e = 0; e < x.eventCount; e++) size += 1 + eventBytes(x.evKind[e]!);
  const w = new Writer(new Uint8Array(size));
  for (const b of MAGIC) w.u8(b);
  w.u8(VERSION);
  let e = 0;
  for (let i = 0; i <= x.insnCount; i++) {
    for (; e < x.eventCount && x.evAt[e] === i; e++) {
      const kind = x.evKind[e]!;
      const used = EVENT_FIELDS[kind]!;
      w.u8(TAG_EVENT + kind);
      if (used & EventField.A) w.u32(x.evA[e]!);
      if (used & EventField.B) w.u32(x.evB[e]!);
      if (used & EventField.Value) w.u64(x.evHi[e]!, x.evLo[e]!);
      if (used & EventField.To) w.u64(x.evToHi[e]!, x.evToLo[e]!);
    }
    if (i === x.insnCount) break;
    const seq = follows(x, i);
    w.u8(seq ? TAG_NEXT : TAG_AT);
    w.u16(x.info[i]!);
    if (!seq) w.u64(x.ipHi[i]!, x.ipLo[i]!);
  }
  return w.buf;
}

class Reader {
  pos = HEADER;
  constructor(readonly buf: Uint8Array) {}

  has(n: number): boolean {
    return this.pos + n <= this.buf.length;
  }

  u16(): number {
    const b = this.buf;
    const v = b[this.pos]! | (b[this.pos + 1]! << 8);
    this.pos += 2;
    return v;
  }

  u32(): number {
    const lo = this.u16();
    return (lo | (this.u16() << 16)) >>> 0;
  }
}

function fail(offset: number, why: string): never {
  throw new PtError(ErrorCode.BadFile, offset, undefined, `execution: ${why}`);
}

/** Parse the binary form; throws {@link PtError} (`BadFile`) at the offending record's offset. */
export function readExecBinary(bytes: Uint8Array): Execution {
  if (bytes.length < HEADER || MAGIC.some((m, i) => bytes[i] !== m)) fail(0, "no PTKEXEC header");
  if (bytes[MAGIC.length] !== VERSION) fail(MAGIC.length, `version ${bytes[MAGIC.length]} is not ${VERSION}`);
  const r = new Reader(bytes);
  const b = new ExecBuilder();
  let nextHi = 0;
  let nextLo = 0;
  while (r.pos < bytes.length) {
    const at = r.pos;
    const tag = bytes[r.pos++]!;
    let why: string;
    if (tag === TAG_NEXT || tag === TAG_AT) {
      if (!r.has(tag === TAG_AT ? 10 : 2)) fail(at, "truncated instruction");
      const info = r.u16();
      if ((info & ~INFO_DEFINED) !== 0) fail(at, `info 0x${info.toString(16)} has undefined bits`);
      if (tag === TAG_AT) {
        nextLo = r.u32();
        nextHi = r.u32();
      }
      const size = infoSize(info);
      why = b.tryInsn(nextHi, nextLo, size, infoClass(info), info & INFO_ZLC ? InsnFlag.ZeroLengthCall : 0);
      const end = nextLo + size;
      nextHi = (nextHi + (end >= 2 ** 32 ? 1 : 0)) >>> 0;
      nextLo = end >>> 0;
    } else {
      const kind = tag - TAG_EVENT;
      const used = EVENT_FIELDS[kind];
      if (used === undefined || tag < TAG_EVENT) fail(at, `tag 0x${tag.toString(16)} is unknown`);
      if (!r.has(eventBytes(kind))) fail(at, "truncated event");
      const a = used & EventField.A ? r.u32() : 0;
      const bb = used & EventField.B ? r.u32() : 0;
      const lo = used & EventField.Value ? r.u32() : 0;
      const hi = used & EventField.Value ? r.u32() : 0;
      const toLo = used & EventField.To ? r.u32() : 0;
      const toHi = used & EventField.To ? r.u32() : 0;
      why = b.tryEvent(kind, a, bb, hi, lo, toHi, toLo);
    }
    if (why !== "") fail(at, why);
  }
  const why = b.unfinished();
  if (why !== "") fail(bytes.length, why);
  return b.build();
}

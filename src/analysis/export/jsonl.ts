/**
 * The decoded flow as JSON Lines: one object per line, in execution order, each with a
 * `type`. Addresses are hex strings ("0x401000") so 64-bit values stay exact;
 * `icount` is the number of instructions executed before the line's item.
 *
 * Schema "ptkit-flow-jsonl" version 1, by type:
 * ```
 * {"type":"schema","schema":"ptkit-flow-jsonl","version":1}           first line
 * {"type":"thread","pid":0,"tid":0}                                   the running thread changed
 * {"type":"time","icount":10,"tsc":"0x2fa1088fac05e2"}                a new TSC (event or tick)
 * {"type":"insn","icount":10,"ip":"0x401000","size":5,"class":"call"} an instruction (libipt's class)
 * {"type":"branch","icount":11,"kind":"call","from":"0x401000","to":"0x401100"}
 *                                                                     a branch (not-taken conditional ones too)
 * {"type":"call","icount":11,"depth":2,"frame":"call","entry":"0x401100","name":"f"}
 *                                                                     a frame was entered (name: with symbols)
 * {"type":"return","icount":20,"depth":2,"end":"return"}              the frame at depth ended (see FrameEnd)
 * {"type":"event","icount":20,"event":"async-branch","ip":"0x401234","from":"0x401010"}
 *                                                                     a decoder event (ip/from when it has them)
 * {"type":"error","icount":20,"offset":4096,"message":"..."}          a gap: decode error or overflow
 * ```
 */

import { hex64 } from "../../base/halves.js";
import type { PtEvent } from "../../event/types.js";
import { EVENT_NAMES, EventType } from "../../event/types.js";
import { FLOW_CLASS_NAMES } from "../../flow/flow-class.js";
import { FRAME_END_NAMES, FRAME_KIND_NAMES, type FrameEnd, type FrameKind } from "../callstack.js";
import { ByteChunks, type ChunkOut } from "./byte-chunks.js";
import type { FrameNames } from "./frame-names.js";

export const JSONL_SCHEMA = "ptkit-flow-jsonl";
export const JSONL_VERSION = 1;

const hex = (hi: number, lo: number) => `"0x${hex64(hi, lo, 0)}"`;

export class JsonlWriter {
  private readonly text: ByteChunks;

  constructor(
    out: ChunkOut,
    private readonly names: FrameNames,
  ) {
    this.text = new ByteChunks(out);
    this.line(`{"type":"schema","schema":"${JSONL_SCHEMA}","version":${JSONL_VERSION}}`);
  }

  private line(json: string): void {
    this.text.text(json);
    this.text.byte(0x0a);
  }

  thread(pid: number, tid: number): void {
    this.line(`{"type":"thread","pid":${pid},"tid":${tid}}`);
  }

  time(tscHi: number, tscLo: number, icount: number): void {
    this.line(`{"type":"time","icount":${icount},"tsc":${hex(tscHi, tscLo)}}`);
  }

  insn(icount: number, hi: number, lo: number, size: number, fclass: number): void {
    this.line(
      `{"type":"insn","icount":${icount},"ip":${hex(hi, lo)},"size":${size},"class":"${FLOW_CLASS_NAMES[fclass]}"}`,
    );
  }

  branch(icount: number, fclass: number, fromHi: number, fromLo: number, toHi: number, toLo: number): void {
    this.line(
      `{"type":"branch","icount":${icount},"kind":"${FLOW_CLASS_NAMES[fclass]}","from":${hex(fromHi, fromLo)},"to":${hex(toHi, toLo)}}`,
    );
  }

  call(icount: number, depth: number, kind: FrameKind, hi: number, lo: number): void {
    const sym = hi === 0 && lo === 0 ? undefined : this.names.symbol(hi, lo);
    const name = sym === undefined ? "" : `,"name":${JSON.stringify(sym)}`;
    this.line(
      `{"type":"call","icount":${icount},"depth":${depth},"frame":"${FRAME_KIND_NAMES[kind]}","entry":${hex(hi, lo)}${name}}`,
    );
  }

  ret(icount: number, depth: number, end: FrameEnd): void {
    this.line(`{"type":"return","icount":${icount},"depth":${depth},"end":"${FRAME_END_NAMES[end]}"}`);
  }

  event(icount: number, ev: PtEvent): void {
    let where = ev.ipSuppressed ? "" : `,"ip":${hex(ev.ipHi, ev.ipLo)}`;
    if (ev.type === EventType.AsyncBranch || ev.type === EventType.AsyncDisabled)
      where += `,"from":${hex(ev.fromHi, ev.fromLo)}`;
    this.line(`{"type":"event","icount":${icount},"event":"${EVENT_NAMES[ev.type]}"${where}}`);
  }

  error(icount: number, offset: number, message: string): void {
    this.line(`{"type":"error","icount":${icount},"offset":${offset},"message":${JSON.stringify(message)}}`);
  }

  finish(): void {
    this.text.flush();
  }
}

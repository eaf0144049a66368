/**
 * perf script's ` sym+0xoff (dso)` after an address, written as bytes: the symbol's
 * and the file's names encoded once each (the tables' strings are few), the offset's
 * digits in place. Lines of branches name two addresses each; building each name as a
 * string and encoding it took a quarter of `ptkit perf --calls --sym`'s time.
 */

import { type ByteChunks, utf8 } from "../analysis/export/byte-chunks.js";
import type { AddressNames } from "./perf-stream.js";

const PLUS_0X = utf8("+0x");
const UNKNOWN_SYM = utf8(" [unknown]");
const DSO_OPEN = utf8(" (");

/** Which parts perf script's -F asks for: sym, symoff, dso. */
export interface SymFields {
  sym: boolean;
  symoff: boolean;
  dso: boolean;
}

export class SymBytes {
  private readonly names = new Map<string, Uint8Array>();

  constructor(private readonly fields: SymFields) {}

  /** The text of hi:lo in process pid (a space before each part, `[unknown]` for either it cannot name) into `out`. */
  put(out: ByteChunks, names: AddressNames, pid: number, hi: number, lo: number): void {
    const f = this.fields;
    const hit = names.parts(pid, hi, lo);
    if (f.sym) {
      if (names.partSym) {
        out.byte(0x20);
        out.bytes(this.bytesOf(hit.name));
        if (f.symoff) {
          out.bytes(PLUS_0X);
          out.hex64(Math.floor(hit.offset / 0x1_0000_0000), hit.offset >>> 0, 1);
        }
      } else out.bytes(UNKNOWN_SYM);
    }
    if (f.dso) {
      out.bytes(DSO_OPEN);
      out.bytes(this.bytesOf(names.partDso ?? "[unknown]"));
      out.byte(0x29);
    }
  }

  private bytesOf(text: string): Uint8Array {
    let b = this.names.get(text);
    if (b === undefined) {
      b = utf8(text);
      this.names.set(text, b);
    }
    return b;
  }
}

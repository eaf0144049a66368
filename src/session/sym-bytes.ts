/**
 * perf script's ` sym+0xoff (dso)` after an address (the parts -F asks for), written as
 * bytes: the symbol's and the file's names encoded once each (the tables' strings are
 * few), the offset's digits in place; or as text, for lines held as text. Lines of
 * branches name two addresses each: building each name as a string and encoding it
 * took a quarter of `ptkit perf --calls --sym`'s time.
 */

import { type ByteChunks, utf8, viewOf } from "../analysis/export/byte-chunks.js";
import type { SymbolHit, SymbolTable } from "../analysis/index.js";
import type { AddressNames } from "./perf-stream.js";

const UNKNOWN_SYM = viewOf(utf8(" [unknown]"));

/** Which parts perf script's -F asks for: sym, symoff, dso. */
export interface SymFields {
  sym: boolean;
  symoff: boolean;
  dso: boolean;
}

export class SymBytes {
  /**
   * ` name` (with `+0x` when the offset follows) as DataViews (copied four bytes a
   * step: see putView), per symbol table by the symbol's index; the table of the last
   * address's (most lines name one or two).
   */
  private readonly tables = new WeakMap<SymbolTable, DataView[]>();
  private lastTable: SymbolTable | undefined;
  private lastNames: DataView[] = [];
  /** ` (file)` as bytes (paths are long: see ByteChunks.bytes). */
  private readonly files = new Map<string, Uint8Array>();
  /** The file of the last address (most lines name one or two). */
  private lastFile: string | undefined;
  private lastFilePiece: Uint8Array | undefined;

  constructor(private readonly fields: SymFields) {}

  /** The text of hi:lo in process pid (a space before each part, `[unknown]` for either it cannot name) into `out`. */
  put(out: ByteChunks, names: AddressNames, pid: number, hi: number, lo: number): void {
    const f = this.fields;
    const hit = names.parts(pid, hi, lo);
    if (f.sym) {
      if (names.partSym) {
        out.viewBytes(this.namePiece(hit));
        if (f.symoff) out.hex64(Math.floor(hit.offset / 0x1_0000_0000), hit.offset >>> 0, 1);
      } else out.viewBytes(UNKNOWN_SYM);
    }
    if (f.dso) {
      const file = names.partDso ?? "[unknown]";
      if (file !== this.lastFile || this.lastFilePiece === undefined) {
        this.lastFile = file;
        this.lastFilePiece = pieceOf(this.files, file, " (", ")");
      }
      out.bytes(this.lastFilePiece);
    }
  }

  /** ` name` of the symbol `hit` found (`+0x` after it when the offset follows), made once per symbol. */
  private namePiece(hit: SymbolHit): DataView {
    const table = hit.table;
    if (table === undefined) return viewOf(utf8(` ${hit.name}${this.fields.symoff ? "+0x" : ""}`));
    if (table !== this.lastTable) {
      let names = this.tables.get(table);
      if (names === undefined) {
        names = [];
        this.tables.set(table, names);
      }
      this.lastTable = table;
      this.lastNames = names;
    }
    let v = this.lastNames[hit.symbol];
    if (v === undefined) {
      v = viewOf(utf8(` ${hit.name}${this.fields.symoff ? "+0x" : ""}`));
      this.lastNames[hit.symbol] = v;
    }
    return v;
  }

  /** The same text as a string. */
  text(names: AddressNames, pid: number, hi: number, lo: number): string {
    const f = this.fields;
    if (!f.sym && !f.dso) return "";
    const hit = names.parts(pid, hi, lo);
    let s = "";
    if (f.sym)
      s += names.partSym ? ` ${hit.name}${f.symoff ? `+0x${hit.offset.toString(16)}` : ""}` : " [unknown]";
    if (f.dso) s += ` (${names.partDso ?? "[unknown]"})`;
    return s;
  }
}

/** `before` + `text` + `after` as UTF-8, made once per text. */
function pieceOf(pieces: Map<string, Uint8Array>, text: string, before: string, after: string): Uint8Array {
  let v = pieces.get(text);
  if (v === undefined) {
    v = utf8(before + text + after);
    pieces.set(text, v);
  }
  return v;
}

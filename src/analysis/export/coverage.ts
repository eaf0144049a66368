/**
 * Coverage of the executed code: basic blocks as they ran (first and last instruction,
 * instruction count, executions), edges between them (the branch instruction, where it
 * went, how often; not-taken conditional branches included) and an AFL-style 64 KiB
 * edge bitmap.
 *
 * The bitmap follows AFL's QEMU mode (the scheme PT fuzzers such as PTfuzzer reuse for
 * decoded traces): each block start address is hashed to a 16-bit location,
 * `cur = ((addr >> 4) ^ (addr << 8)) & 0xffff`; entering a block increments the byte at
 * `cur ^ prev` (wrapping at 256, as AFL's counters do) and sets `prev = cur >> 1`.
 * `prev` is 0 at the start and after every gap, so the first block after one counts as
 * reached from nowhere. Only the low 20 bits of the address matter.
 *
 * JSON schema "ptkit-coverage" version 1:
 * ```
 * { "schema": "ptkit-coverage", "version": 1,
 *   "blocks": [{ "start": "0x401000", "end": "0x401010", "insns": 5, "count": 3,
 *                "symbol": "main+0x10" }, ...],      // symbol: only with symbols
 *   "edges": [{ "from": "0x401010", "to": "0x401100", "count": 3 }, ...],
 *   "dropped": { "blocks": 0, "edges": 0 } }         // not kept: table limit reached
 * ```
 * Addresses are hex strings (64-bit exact); blocks and edges are sorted by address.
 */
import { hex64 } from "../../packet/u64.js";
import { growFloat64, growUint32, KeyTable } from "../key-table.js";

export const AFL_MAP_SIZE = 1 << 16;

export class Coverage {
  private readonly blocks: KeyTable;
  private readonly edges: KeyTable;
  private blockInsns: Uint32Array = new Uint32Array(256);
  private blockCount: Float64Array = new Float64Array(256);
  private edgeCount: Float64Array = new Float64Array(256);
  /** The AFL bitmap, filled as blocks are entered. */
  readonly aflMap: Uint8Array = new Uint8Array(AFL_MAP_SIZE);
  private prev = 0;

  constructor(maxEntries = 1 << 21) {
    this.blocks = new KeyTable(maxEntries);
    this.edges = new KeyTable(maxEntries);
  }

  /** A block ran: first instruction (startHi:startLo), last (endHi:endLo), `insns` instructions. */
  block(startHi: number, startLo: number, endHi: number, endLo: number, insns: number): void {
    const id = this.blocks.id(startHi, startLo, endHi, endLo);
    if (id < 0) return;
    if (id >= this.blockCount.length) {
      this.blockCount = growFloat64(this.blockCount, id + 1);
      this.blockInsns = growUint32(this.blockInsns, id + 1);
    }
    this.blockCount[id]! += 1;
    this.blockInsns[id] = insns;
  }

  /** The branch at (fromHi:fromLo) went to (toHi:toLo), where a block starts. */
  edge(fromHi: number, fromLo: number, toHi: number, toLo: number): void {
    this.enter(toLo);
    const id = this.edges.id(fromHi, fromLo, toHi, toLo);
    if (id < 0) return;
    if (id >= this.edgeCount.length) this.edgeCount = growFloat64(this.edgeCount, id + 1);
    this.edgeCount[id]! += 1;
  }

  /** A block starts at an address with low half `lo` that no edge leads to (after a gap). */
  restart(lo: number): void {
    this.prev = 0;
    this.enter(lo);
  }

  private enter(lo: number): void {
    const cur = ((lo >>> 4) ^ (lo << 8)) & 0xffff;
    const i = cur ^ this.prev;
    this.aflMap[i] = (this.aflMap[i]! + 1) & 0xff;
    this.prev = cur >>> 1;
  }

  /** The JSON document, in chunks; `name` gives a block's symbol (or undefined). */
  write(out: (chunk: string) => void, name?: (hi: number, lo: number) => string | undefined): void {
    out('{"schema":"ptkit-coverage","version":1,\n"blocks":[');
    const bk = this.blocks.keys;
    let parts: string[] = [];
    const flush = () => {
      out(parts.join(""));
      parts = [];
    };
    let first = true;
    for (const id of sortedIds(bk, this.blocks.size)) {
      const k = 4 * id;
      const sym = name?.(bk[k]!, bk[k + 1]!);
      parts.push(
        `${first ? "\n" : ",\n"}{"start":"0x${hex64(bk[k]!, bk[k + 1]!, 0)}","end":"0x${hex64(bk[k + 2]!, bk[k + 3]!, 0)}",` +
          `"insns":${this.blockInsns[id]},"count":${this.blockCount[id]}${sym === undefined ? "" : `,"symbol":${JSON.stringify(sym)}`}}`,
      );
      first = false;
      if (parts.length >= 4096) flush();
    }
    parts.push('],\n"edges":[');
    const ek = this.edges.keys;
    first = true;
    for (const id of sortedIds(ek, this.edges.size)) {
      const k = 4 * id;
      parts.push(
        `${first ? "\n" : ",\n"}{"from":"0x${hex64(ek[k]!, ek[k + 1]!, 0)}","to":"0x${hex64(ek[k + 2]!, ek[k + 3]!, 0)}","count":${this.edgeCount[id]}}`,
      );
      first = false;
      if (parts.length >= 4096) flush();
    }
    parts.push(`],\n"dropped":{"blocks":${this.blocks.refused},"edges":${this.edges.refused}}}\n`);
    flush();
  }
}

/** Ids 0..n-1 ordered by their four key words (two addresses). */
function sortedIds(keys: Uint32Array, n: number): Uint32Array {
  const ids = new Uint32Array(n);
  for (let i = 0; i < n; i++) ids[i] = i;
  return ids.sort((x, y) => {
    for (let w = 0; w < 4; w++) {
      const d = keys[4 * x + w]! - keys[4 * y + w]!;
      if (d !== 0) return d;
    }
    return 0;
  });
}

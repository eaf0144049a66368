/**
 * Which PLT stubs perf 6.1 finds when an ELF symbol covers them too (a zero-size
 * `_init` run to the next symbol). perf keeps a file's symbols in a red-black tree
 * keyed by start (inserted in symbol-table order, then the stubs) and a lookup returns
 * the first node on its search path whose range holds the address: the stub when the
 * stub is not below the covering symbol. This replays the insertions (a plain
 * red-black tree, equal keys to the right) to learn the tree's shape. Aliases perf
 * later erases are left out, so the shape is perf's only approximately.
 */
import { lt64 } from "../base/u64.js";
import { SectionType } from "../image/elf.js";
import { type ElfData, SHT_DYNSYM } from "./elf-data.js";
import type { RawSymbol } from "./raw-symbol.js";

/**
 * Symbols as perfTreeSymbols reads them: per symbol its value's halves and its size.
 * Not BigInts: a large program's 100k symbols took half a second as BigInts, most of it
 * making and collecting them.
 */
export interface TreeSymbols {
  hi: number[];
  lo: number[];
  size: number[];
}

/**
 * The symbols perf 6.1 puts in its tree, in table order: of `.symtab` (else `.dynsym`),
 * named functions and objects of a defined section, and labels in a section whose name
 * holds "text" or "data" (dso__load_sym's filter).
 */
export function perfTreeSymbols(data: ElfData): TreeSymbols {
  const out: TreeSymbols = { hi: [], lo: [], size: [] };
  if (!data.is64) return out;
  const sections = data.elf.sections;
  const table =
    sections.find((s) => s.type === SectionType.Symtab) ?? sections.find((s) => s.type === SHT_DYNSYM);
  if (!table) return out;
  // A word's halves at p: the low one first in a little-endian file.
  const low = data.le ? 0 : 4;
  for (let i = 1; i < Math.floor(table.size / 24); i++) {
    const at = table.offset + i * 24;
    const type = data.u8(at + 4) & 0xf;
    const shndx = data.u16(at + 6);
    if (data.u32(at) === 0 || shndx === 0 || shndx >= 0xff00) continue;
    const isLabel = type === 0;
    if (!isLabel && type !== 1 && type !== 2 && type !== 10) continue;
    const name = sections[shndx]?.name ?? "";
    if (isLabel && !name.includes("text") && !name.includes("data")) continue;
    out.hi.push(data.u32(at + 8 + 4 - low));
    out.lo.push(data.u32(at + 8 + low));
    // (As Number(st_size) rounds it past 2^53.)
    out.size.push(data.u32(at + 16 + 4 - low) * T32 + data.u32(at + 16 + low));
  }
  return out;
}

const T32 = 0x1_0000_0000;

/** The end of a range from (h:l) of `n` bytes, as halves ({@link rangeHi}, {@link rangeLo}: past 2^64 as it comes). */
let rangeHi = 0;
let rangeLo = 0;
function rangeEnd(h: number, l: number, n: number): void {
  const sizeHi = Math.floor(n / T32);
  const low = l + (n - sizeHi * T32);
  rangeHi = low >= T32 ? h + sizeHi + 1 : h + sizeHi;
  rangeLo = low >= T32 ? low - T32 : low;
}

/**
 * The stubs a lookup at their start finds (not a symbol covering them). Where no
 * symbol can cover a stub (no sized one at or below the highest stub ends past the
 * lowest, and no zero-size one starts between the last start at or below the lowest
 * stub and the highest: so in stripped files, whose `.dynsym` has no `_init` before
 * the PLT), every stub; else as perf's tree finds them ({@link stubsFoundByTree}: a
 * replay of 150k insertions for a large program).
 */
export function stubsFoundFirst(symbols: TreeSymbols, stubs: readonly RawSymbol[]): RawSymbol[] {
  return mayCover(symbols, stubs) ? stubsFoundByTree(symbols, stubs) : stubs.slice();
}

/** Whether a symbol may cover a stub's start (false: none does). */
function mayCover(symbols: TreeSymbols, stubs: readonly RawSymbol[]): boolean {
  if (stubs.length === 0) return false;
  let min = stubs[0]!.value;
  let max = min;
  for (const p of stubs) {
    if (p.value < min) min = p.value;
    if (p.value > max) max = p.value;
  }
  const minHi = Number(min >> 32n);
  const minLo = Number(min & 0xffffffffn);
  const maxHi = Number(max >> 32n);
  const maxLo = Number(max & 0xffffffffn);
  const { hi, lo, size } = symbols;
  // The greatest start at or below the lowest stub (-1: none).
  let belowHi = -1;
  let belowLo = 0;
  for (let k = 0; k < hi.length; k++) {
    const h = hi[k]!;
    const l = lo[k]!;
    if (lt64(maxHi, maxLo, h, l)) continue;
    // At or below the highest stub: a sized one that ends past the lowest may cover one.
    if (size[k]! > 0) {
      rangeEnd(h, l, size[k]!);
      if (lt64(minHi, minLo, rangeHi, rangeLo)) return true;
    }
    if (!lt64(minHi, minLo, h, l) && (belowHi < 0 || lt64(belowHi, belowLo, h, l))) {
      belowHi = h;
      belowLo = l;
    }
  }
  // A zero-size symbol reaches the next start: one at or above that start, up to the
  // highest stub, may cover one.
  for (let k = 0; k < hi.length; k++) {
    if (size[k]! > 0) continue;
    const h = hi[k]!;
    const l = lo[k]!;
    if (!lt64(maxHi, maxLo, h, l) && (belowHi < 0 || !lt64(h, l, belowHi, belowLo))) return true;
  }
  return false;
}

/**
 * The symbols' indices by value, then index: as packed doubles (value * 2^bits + index)
 * by the built-in sort where that is exact (values below 2^35 for 150k symbols: a
 * program's or library's), else by comparison (sorting node's 153k by a comparator
 * took a third of the tree's replay).
 */
function byValue(symbols: TreeSymbols): Int32Array {
  const { hi, lo } = symbols;
  const count = hi.length;
  const order = new Int32Array(count);
  const scale = 2 ** Math.max(1, Math.ceil(Math.log2(count + 1)));
  let max = 0;
  for (let k = 0; k < count; k++) max = Math.max(max, hi[k]! * T32 + lo[k]!);
  if (max * scale < 2 ** 53) {
    const keys = new Float64Array(count);
    for (let k = 0; k < count; k++) keys[k] = (hi[k]! * T32 + lo[k]!) * scale + k;
    keys.sort();
    for (let k = 0; k < count; k++) order[k] = keys[k]! % scale;
    return order;
  }
  for (let k = 0; k < count; k++) order[k] = k;
  return order.sort((a, b) => hi[a]! - hi[b]! || lo[a]! - lo[b]! || a - b);
}

/** {@link stubsFoundFirst} by a replay of perf's tree. */
export function stubsFoundByTree(symbols: TreeSymbols, stubs: readonly RawSymbol[]): RawSymbol[] {
  const count = symbols.hi.length;
  const n = count + stubs.length;
  // Each node's start and end (start + size, past 2^64 as it comes) as halves, compared
  // by lt64 (a high half past 32 bits compares as it is).
  const startHi = new Float64Array(n);
  const startLo = new Float64Array(n);
  const endHi = new Float64Array(n);
  const endLo = new Float64Array(n);
  let size = 0;
  const left = new Int32Array(n).fill(-1);
  const right = new Int32Array(n).fill(-1);
  const parent = new Int32Array(n).fill(-1);
  const red = new Uint8Array(n);
  let root = -1;
  const rotate = (x: number, toLeft: boolean) => {
    const y = toLeft ? right[x]! : left[x]!;
    const inner = toLeft ? left[y]! : right[y]!;
    if (toLeft) right[x] = inner;
    else left[x] = inner;
    if (inner >= 0) parent[inner] = x;
    const p = parent[x]!;
    parent[y] = p;
    if (p < 0) root = y;
    else if (left[p] === x) left[p] = y;
    else right[p] = y;
    if (toLeft) left[y] = x;
    else right[y] = x;
    parent[x] = y;
  };
  const insert = (sh: number, sl: number, eh: number, el: number): number => {
    const z = size++;
    startHi[z] = sh;
    startLo[z] = sl;
    endHi[z] = eh;
    endLo[z] = el;
    red[z] = 1;
    let p = -1;
    for (let at = root; at >= 0; at = lt64(sh, sl, startHi[at]!, startLo[at]!) ? left[at]! : right[at]!)
      p = at;
    parent[z] = p;
    if (p < 0) root = z;
    else if (lt64(sh, sl, startHi[p]!, startLo[p]!)) left[p] = z;
    else right[p] = z;
    let x = z;
    while (parent[x]! >= 0 && red[parent[x]!]) {
      let q = parent[x]!;
      const g = parent[q]!;
      const onLeft = left[g] === q;
      const uncle = onLeft ? right[g]! : left[g]!;
      if (uncle >= 0 && red[uncle]) {
        red[q] = 0;
        red[uncle] = 0;
        red[g] = 1;
        x = g;
        continue;
      }
      if (x === (onLeft ? right[q] : left[q])) {
        x = q;
        rotate(x, onLeft);
        q = parent[x]!;
      }
      red[q] = 0;
      red[g] = 1;
      rotate(g, !onLeft);
    }
    red[root] = 0;
    return z;
  };
  // Zero-size symbols reach the next start (perf's symbols__fixup_end): the next
  // distinct value in value order (a symbol of the last reaches its own start).
  const { hi, lo } = symbols;
  const order = byValue(symbols);
  const nextHi = new Float64Array(count);
  const nextLo = new Float64Array(count);
  for (let k = count - 1, h = 0, l = 0, at = -1; k >= 0; k--) {
    const s = order[k]!;
    // (The next greater value: that of the run of equal values after this one's.)
    if (at < 0 || hi[s] !== hi[order[at]!] || lo[s] !== lo[order[at]!]) {
      if (at >= 0) {
        h = hi[order[at]!]!;
        l = lo[order[at]!]!;
      } else {
        h = hi[s]!;
        l = lo[s]!;
      }
      at = k;
    }
    nextHi[s] = h;
    nextLo[s] = l;
  }
  for (let k = 0; k < count; k++) {
    if (symbols.size[k]! > 0) rangeEnd(hi[k]!, lo[k]!, symbols.size[k]!);
    else {
      rangeHi = nextHi[k]!;
      rangeLo = nextLo[k]!;
    }
    insert(hi[k]!, lo[k]!, rangeHi, rangeLo);
  }
  const at = stubs.map((p) => {
    const h = Number(p.value >> 32n);
    const l = Number(p.value & 0xffffffffn);
    rangeEnd(h, l, p.size);
    return { h, l, id: insert(h, l, rangeHi, rangeLo) };
  });
  return stubs.filter((_, k) => {
    const { h, l, id } = at[k]!;
    let node = root;
    while (node >= 0) {
      if (lt64(h, l, startHi[node]!, startLo[node]!)) node = left[node]!;
      else if (!lt64(h, l, endHi[node]!, endLo[node]!)) node = right[node]!;
      else break;
    }
    return node === id;
  });
}

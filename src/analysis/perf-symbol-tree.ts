/**
 * Which PLT stubs perf 6.1 finds when an ELF symbol covers them too (a zero-size
 * `_init` run to the next symbol). perf keeps a file's symbols in a red-black tree
 * keyed by start (inserted in symbol-table order, then the stubs) and a lookup returns
 * the first node on its search path whose range holds the address: the stub when the
 * stub is not below the covering symbol. This replays the insertions (a plain
 * red-black tree, equal keys to the right) to learn the tree's shape. Aliases perf
 * later erases are left out, so the shape is perf's only approximately.
 */
import { SectionType } from "../image/elf.js";
import { type ElfData, SHT_DYNSYM } from "./elf-data.js";
import type { RawSymbol } from "./raw-symbol.js";

/**
 * The symbols perf 6.1 puts in its tree, in table order: of `.symtab` (else `.dynsym`),
 * named functions and objects of a defined section, and labels in a section whose name
 * holds "text" or "data" (dso__load_sym's filter).
 */
export function perfTreeSymbols(data: ElfData): { value: bigint; size: number }[] {
  const out: { value: bigint; size: number }[] = [];
  if (!data.is64) return out;
  const sections = data.elf.sections;
  const table =
    sections.find((s) => s.type === SectionType.Symtab) ?? sections.find((s) => s.type === SHT_DYNSYM);
  if (!table) return out;
  for (let i = 1; i < Math.floor(table.size / 24); i++) {
    const at = table.offset + i * 24;
    const type = data.u8(at + 4) & 0xf;
    const shndx = data.u16(at + 6);
    if (data.u32(at) === 0 || shndx === 0 || shndx >= 0xff00) continue;
    const isLabel = type === 0;
    if (!isLabel && type !== 1 && type !== 2 && type !== 10) continue;
    const name = sections[shndx]?.name ?? "";
    if (isLabel && !name.includes("text") && !name.includes("data")) continue;
    out.push({ value: data.word(at + 8), size: Number(data.word(at + 16)) });
  }
  return out;
}

/** The stubs a lookup at their start finds (not a symbol covering them). */
export function stubsFoundFirst(
  symbols: readonly { value: bigint; size: number }[],
  stubs: readonly RawSymbol[],
): RawSymbol[] {
  const n = symbols.length + stubs.length;
  const start: bigint[] = [];
  const end: bigint[] = [];
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
  const insert = (s: bigint, e: bigint): number => {
    const z = start.length;
    start.push(s);
    end.push(e);
    red[z] = 1;
    let p = -1;
    for (let at = root; at >= 0; at = s < start[at]! ? left[at]! : right[at]!) p = at;
    parent[z] = p;
    if (p < 0) root = z;
    else if (s < start[p]!) left[p] = z;
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
  // Zero-size symbols reach the next start (perf's symbols__fixup_end).
  const starts = [...new Set(symbols.map((s) => s.value))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const next = new Map<bigint, bigint>();
  for (let k = 0; k < starts.length; k++) next.set(starts[k]!, starts[k + 1] ?? starts[k]!);
  for (const s of symbols) insert(s.value, s.size > 0 ? s.value + BigInt(s.size) : next.get(s.value)!);
  const ids = stubs.map((p) => insert(p.value, p.value + BigInt(p.size)));
  return stubs.filter((p, k) => {
    let at = root;
    while (at >= 0) {
      if (p.value < start[at]!) at = left[at]!;
      else if (p.value >= end[at]!) at = right[at]!;
      else break;
    }
    return at === ids[k];
  });
}

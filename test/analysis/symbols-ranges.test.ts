/**
 * How a SymbolTable's ranges are made, against a model of the rule it documents: the
 * preferred symbol per address (raw-symbol.ts), sized symbols over [value, value +
 * size), zero-size ones to the next symbol of their section or the section's end, and
 * an address owned by the covering range that starts last. Random tables of two code
 * sections (aliases, nesting, zero sizes), at a load bias; and symbols far from the
 * rest (a corrupt file), which are skipped with a diagnostic.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { SymbolHit, SymbolTable } from "../../src/analysis/index.js";
import { type RawSymbol, RawSymbols, rank } from "../../src/analysis/raw-symbol.js";
import { parseElf } from "../../src/image/elf.js";
import { SHT_PROGBITS, SHT_STRTAB } from "../../tools/elf/elf-writer.js";
import { executable, stringTable, symbolTable } from "./elf-tables.js";

/** The two code sections: header index, address, size. */
const SECTIONS = [
  { index: 1, addr: 0x401000n, size: 0x300 },
  { index: 2, addr: 0x402000n, size: 0x200 },
] as const;

interface Sym {
  section: 0 | 1;
  at: number;
  size: number;
  /** st_info: global function, local function, global untyped label, weak function. */
  info: 0x12 | 0x02 | 0x10 | 0x22;
}

/**
 * An ELF of the two sections and `syms` in .symtab (named s0, s1, ... in table order),
 * then `far` functions (far0, ...) and `unnamed` ones (st_name 0: the empty name) at
 * those values.
 */
function elfOf(syms: readonly Sym[], far: readonly bigint[] = [], unnamed: readonly bigint[] = []) {
  const names = [...syms.map((_, k) => `s${k}`), ...far.map((_, k) => `far${k}`)];
  const str = stringTable(names);
  const entries = [
    ...syms.map(
      (s, k) =>
        [
          str.at(`s${k}`),
          s.info,
          SECTIONS[s.section].index,
          SECTIONS[s.section].addr + BigInt(s.at),
          BigInt(s.size),
        ] as const,
    ),
    ...far.map((value, k) => [str.at(`far${k}`), 0x12, 1, value, 8n] as const),
    ...unnamed.map((value) => [0, 0x12, 1, value, 64n] as const),
  ];
  const layout = executable([
    ...SECTIONS.map((s, k) => ({
      name: k === 0 ? ".text" : ".text.two",
      type: SHT_PROGBITS,
      flags: 6n,
      addr: s.addr,
      data: new Uint8Array(s.size),
    })),
    { name: ".symtab", type: 2, data: symbolTable(entries) },
    { name: ".strtab", type: SHT_STRTAB, data: str.bytes },
  ]);
  new DataView(layout.bytes.buffer).setUint32(layout.shoff + 3 * 64 + 40, 4, true);
  return parseElf(layout.bytes);
}

/** The name (`name+offset`) the documented rule gives each address of the sections, by link-time address. */
function model(syms: readonly Sym[]): Map<bigint, string> {
  const raw: RawSymbol[] = syms.map((s, k) => ({
    name: `s${k}`,
    value: SECTIONS[s.section].addr + BigInt(s.at),
    size: s.size,
    section: SECTIONS[s.section].index,
    rank: rank(s.info !== 0x10, true),
    binding: s.info >> 4,
  }));
  // perf's choice among aliases, as the tables make it (RawSymbols.preferred).
  const columns = new RawSymbols();
  for (const s of raw) columns.add(s);
  const best = new Map<bigint, number>();
  for (const [k, s] of raw.entries()) {
    const had = best.get(s.value);
    if (had === undefined || columns.preferred(k, had)) best.set(s.value, k);
  }
  const byValue = [...best.values()].map((k) => raw[k]!).sort((a, b) => (a.value < b.value ? -1 : 1));
  const ranges = byValue.map((s) => {
    const next = byValue.find((o) => o.section === s.section && o.value > s.value);
    const sec = SECTIONS.find((x) => x.index === s.section)!;
    const end = s.size > 0 ? s.value + BigInt(s.size) : (next?.value ?? sec.addr + BigInt(sec.size));
    return { s, end };
  });
  const names = new Map<bigint, string>();
  for (const sec of SECTIONS)
    for (let a = sec.addr - 8n; a < sec.addr + BigInt(sec.size) + 8n; a++) {
      let owner: { s: RawSymbol; end: bigint } | undefined;
      for (const r of ranges)
        if (r.s.value <= a && a < r.end && (!owner || r.s.value > owner.s.value)) owner = r;
      names.set(a, owner ? `${owner.s.name}+${a - owner.s.value}` : "-");
    }
  return names;
}

function nameAt(table: SymbolTable, addr: bigint, hit: SymbolHit): string {
  return table.lookup(Number(addr >> 32n), Number(addr & 0xffffffffn), hit)
    ? `${hit.name}+${hit.offset}`
    : "-";
}

const symArb: fc.Arbitrary<Sym> = fc.record({
  section: fc.constantFrom(0 as const, 1 as const),
  // Few distinct places, so that aliases and nesting are common (up to the second section's end).
  at: fc.nat(64).map((n) => n * 8),
  size: fc.oneof(fc.constant(0), fc.nat(96)),
  info: fc.constantFrom(0x12 as const, 0x02 as const, 0x10 as const, 0x22 as const),
});

/** No load bias, a shared object's, and one that puts 0x401100 at 2^32 (halves carry there). */
const BIASES = fc.constantFrom(0n, 0x7f0000000000n, 0x100000000n - 0x401100n);

test("ranges follow the documented rule: preferred per address, zero sizes to the next symbol, latest start owns", () => {
  const hit = new SymbolHit();
  fc.assert(
    fc.property(fc.array(symArb, { minLength: 1, maxLength: 40 }), BIASES, (syms, bias) => {
      const table = new SymbolTable(elfOf(syms), { bias });
      for (const [addr, want] of model(syms))
        assert.equal(nameAt(table, addr + bias, hit), want, `0x${addr.toString(16)}`);
    }),
    { numRuns: 300 },
  );
});

test("symbols 2^52 bytes or more from the rest (a corrupt file) are skipped with a diagnostic", () => {
  const hit = new SymbolHit();
  const syms: Sym[] = [
    { section: 0, at: 0, size: 16, info: 0x12 },
    { section: 0, at: 32, size: 16, info: 0x12 },
  ];
  // Two far symbols, each alone within 2^52 bytes: the two near ones are the most.
  const table = new SymbolTable(elfOf(syms, [0x20000000000000n, 0xffff800000000000n]));
  assert.equal(nameAt(table, 0x401004n, hit), "s0+4");
  assert.equal(nameAt(table, 0x401024n, hit), "s1+4");
  assert.equal(nameAt(table, 0x20000000000004n, hit), "-");
  assert.equal(nameAt(table, 0xffff800000000004n, hit), "-");
  assert.equal(table.diagnosticCount, 2);
  assert.match(
    table.diagnostics[0]!.message,
    /symbol far0 at 0x20000000000000: 2\^52 bytes or more .*skipped/,
  );
  // 2^51 bytes apart is within reach: both kept (ordered by comparison, not by packed keys).
  const wide = new SymbolTable(elfOf([...syms].reverse(), [0x401000n + (1n << 51n)]));
  assert.equal(nameAt(wide, 0x401004n, hit), "s1+4");
  assert.equal(nameAt(wide, 0x401024n, hit), "s0+4");
  assert.equal(nameAt(wide, 0x401002n + (1n << 51n), hit), "far0+2");
  assert.equal(wide.diagnosticCount, 0);
  // Far symbols together outnumbering the rest are the ones kept.
  const many = new SymbolTable(elfOf(syms.slice(0, 1), [0xffffffff81000000n, 0xffffffff81000010n]));
  assert.equal(nameAt(many, 0xffffffff81000012n, hit), "far1+2");
  assert.equal(nameAt(many, 0x401004n, hit), "-");
  assert.equal(many.diagnosticCount, 1);
});

test("a name that runs past its string table's end is skipped with a diagnostic; the others are read", () => {
  const hit = new SymbolHit();
  const syms: Sym[] = [
    { section: 0, at: 0, size: 16, info: 0x12 },
    { section: 0, at: 32, size: 16, info: 0x12 },
  ];
  const elf = elfOf(syms);
  const strtab = elf.sections.find((s) => s.name === ".strtab")!;
  // The table ends with "s1" and its NUL: without the NUL, s1's name runs past the end.
  const bytes = elf.bytes.slice();
  assert.equal(bytes[strtab.offset + strtab.size - 1], 0);
  bytes[strtab.offset + strtab.size - 1] = 0x78;
  const table = new SymbolTable(parseElf(bytes));
  assert.equal(nameAt(table, 0x401004n, hit), "s0+4");
  assert.equal(nameAt(table, 0x401024n, hit), "-");
  assert.equal(table.diagnosticCount, 1);
  assert.match(table.diagnostics[0]!.message, /symbol 2: st_name 0x4 outside \.strtab/);
});

test("a function without a name (st_name 0) names nothing", () => {
  const hit = new SymbolHit();
  const table = new SymbolTable(elfOf([{ section: 0, at: 0, size: 16, info: 0x12 }], [], [0x401100n]));
  assert.equal(nameAt(table, 0x401004n, hit), "s0+4");
  assert.equal(nameAt(table, 0x401104n, hit), "-");
  assert.equal(table.diagnosticCount, 0);
});

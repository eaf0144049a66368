/**
 * Symbols from a hand-built ELF: sizes, zero-size symbols, nesting, preference at one
 * address, PLT stubs, load bias, corrupt tables skipped with diagnostics, and lookups
 * that never throw on random addresses or mutated files.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import fc from "fast-check";
import { SymbolHit, Symbolizer, SymbolTable } from "../../src/analysis/index.js";
import { parseElf } from "../../src/image/elf.js";
import { ET_EXEC, SHT_PROGBITS, SHT_STRTAB, writeElf } from "../../tools/elf/elf-writer.js";
import { stringTable, symbolTable } from "./elf-tables.js";

const TEXT = 0x401000n;
const PLT = 0x400800n;
const GOT_SLOT = 0x403018n;
const SYMTAB = 3;
const DYNSYM = 5;
const RELA = 7;
const VERSYM = 8;
const VERDEF = 9;

/** The test file and the file offsets of its symbol and relocation entries. */
function build() {
  const str = stringTable(["main", "main_alias", "inner", "helper", "label"]);
  const s = str.at;
  const symtab = symbolTable([
    [s("main"), 0x12, 1, TEXT, 0x40n],
    [s("main_alias"), 0x02, 1, TEXT, 0x40n],
    [s("inner"), 0x02, 1, TEXT + 0x10n, 0x10n],
    [s("helper"), 0x02, 1, TEXT + 0x40n, 0n],
    [s("label"), 0x00, 1, TEXT + 0x80n, 0n],
    [0x9999, 0x12, 1, TEXT + 0x90n, 4n], // st_name outside .strtab
    [s("main"), 0x12, 77, TEXT + 0x94n, 4n], // st_shndx beyond the table
    [s("main"), 0x12, 0, 0n, 0n], // undefined: skipped silently
  ]);
  const dyn = stringTable(["puts", "dynf", "dynh", "lib", "V1", "V0"]);
  const d = dyn.at;
  const dynsym = symbolTable([
    [d("puts"), 0x12, 0, 0n, 0n],
    [d("dynf"), 0x12, 1, TEXT + 0xf0n, 8n],
    [d("dynh"), 0x12, 1, TEXT + 0xf8n, 8n],
  ]);
  const versym = Uint8Array.from([0, 0, 1, 0, 2, 0, 3, 0x80]); // dynh: version 3, hidden
  const verdef = new Uint8Array(3 * 28); // Verdef + Verdaux: lib (base), V1, V0
  const dv = new DataView(verdef.buffer);
  ["lib", "V1", "V0"].forEach((n, k) => {
    const p = k * 28;
    dv.setUint16(p, 1, true);
    dv.setUint16(p + 2, k === 0 ? 1 : 0, true);
    dv.setUint16(p + 4, k + 1, true);
    dv.setUint16(p + 6, 1, true);
    dv.setUint32(p + 12, 20, true);
    dv.setUint32(p + 16, k < 2 ? 28 : 0, true);
    dv.setUint32(p + 20, d(n), true);
  });
  const rela = new Uint8Array(48);
  const rv = new DataView(rela.buffer);
  rv.setBigUint64(0, GOT_SLOT, true);
  rv.setBigUint64(8, (1n << 32n) | 7n, true); // R_X86_64_JUMP_SLOT, symbol 1
  rv.setBigUint64(24, GOT_SLOT + 8n, true);
  rv.setBigUint64(32, (99n << 32n) | 7n, true); // symbol 99: not in .dynsym
  const plt = new Uint8Array(32); // PLT0 (zeros) and one stub: jmp *GOT_SLOT(%rip)
  plt.set([0xff, 0x25], 16);
  new DataView(plt.buffer).setInt32(18, Number(GOT_SLOT - (PLT + 16n + 6n)), true);
  const layout = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: TEXT, data: new Uint8Array(0x100) },
      { name: ".plt", type: SHT_PROGBITS, flags: 6n, addr: PLT, data: plt },
      { name: ".symtab", type: 2, data: symtab },
      { name: ".strtab", type: SHT_STRTAB, data: str.bytes },
      { name: ".dynsym", type: 11, data: dynsym },
      { name: ".dynstr", type: SHT_STRTAB, data: dyn.bytes },
      { name: ".rela.plt", type: 4, data: rela },
      { name: ".gnu.version", type: 0x6fffffff, data: versym },
      { name: ".gnu.version_d", type: 0x6ffffffd, data: verdef },
    ],
  });
  const v = new DataView(layout.bytes.buffer);
  const link = (sec: number, to: number, field = 40) =>
    v.setUint32(layout.shoff + sec * 64 + field, to, true);
  link(SYMTAB, SYMTAB + 1);
  link(DYNSYM, DYNSYM + 1);
  link(RELA, DYNSYM);
  link(VERSYM, DYNSYM);
  link(VERDEF, DYNSYM + 1);
  link(VERDEF, 3, 44); // sh_info: 3 definitions
  return { ...layout, link };
}

function lookup(t: { lookup(hi: number, lo: number, out: SymbolHit): boolean }, addr: bigint) {
  const hit = new SymbolHit();
  return t.lookup(Number(addr >> 32n), Number(addr & 0xffffffffn), hit) ? `${hit.name}+${hit.offset}` : "-";
}

test("sizes, zero-size symbols, nesting and preference at one address", () => {
  const table = new SymbolTable(parseElf(build().bytes));
  const cases: [bigint, string][] = [
    [TEXT - 1n, "-"],
    [TEXT, "main+0"], // global main over local main_alias
    [TEXT + 0x12n, "inner+2"], // innermost
    [TEXT + 0x20n, "main+32"], // outer again after inner's end
    [TEXT + 0x50n, "helper+16"], // zero size: up to label
    [TEXT + 0xefn, "label+111"], // zero size: up to the next symbol
    [TEXT + 0xf0n, "dynf@@V1+0"], // default version
    [TEXT + 0xffn, "dynh@V0+7"], // hidden version
    [TEXT + 0x100n, "-"],
    [PLT, "-"], // PLT0 is not a stub
    [PLT + 0x10n, "puts@plt+0"],
    [PLT + 0x1fn, "puts@plt+15"],
    [PLT + 0x20n, "-"],
  ];
  for (const [addr, want] of cases) assert.equal(lookup(table, addr), want, `0x${addr.toString(16)}`);
});

test("corrupt entries are skipped with diagnostics naming their offsets", () => {
  const elf = build();
  const table = new SymbolTable(parseElf(elf.bytes));
  const sym = elf.secOffsets[SYMTAB]!;
  assert.deepEqual(
    table.diagnostics.map((d) => [d.offset, d.message]),
    [
      [sym + 6 * 24, "section 3 (.symtab): symbol 6: st_name 0x9999 outside .strtab"],
      [sym + 7 * 24, "section 3 (.symtab): symbol 7: st_shndx 77 beyond the 11 sections"],
      [elf.secOffsets[RELA]! + 24, "section 7 (.rela.plt): relocation 1: symbol 99 not in a .dynsym"],
    ],
  );
  assert.equal(lookup(table, TEXT + 0x90n), "label+16");
});

test("a bad version definition is skipped with a diagnostic; its symbols keep plain names", () => {
  const elf = build();
  const at = elf.secOffsets[VERDEF]! + 28;
  new DataView(elf.bytes.buffer).setUint32(at + 12, 0x1000, true); // vd_aux of V1
  const table = new SymbolTable(parseElf(elf.bytes));
  assert.deepEqual(table.diagnostics[2], {
    offset: at,
    message: "section 9 (.gnu.version_d): vd_aux beyond the section",
  });
  assert.equal(lookup(table, TEXT + 0xf0n), "dynf+0");
  assert.equal(lookup(table, TEXT + 0xf8n), "dynh@V0+0");
});

test("a symbol table linked to a non-string table is skipped; the rest still works", () => {
  const elf = build();
  elf.link(SYMTAB, 1);
  const table = new SymbolTable(parseElf(elf.bytes));
  assert.equal(table.diagnostics[0]!.offset, elf.shoff + SYMTAB * 64);
  assert.match(table.diagnostics[0]!.message, /sh_link 1 is not a string table; table skipped/);
  assert.equal(lookup(table, TEXT), "-");
  assert.equal(lookup(table, PLT + 0x10n), "puts@plt+0");
});

test("load bias, several modules and format", () => {
  const elf = parseElf(build().bytes);
  const s = new Symbolizer();
  const high = 0x7f0000000000n;
  assert.equal(s.add(new SymbolTable(elf, { name: "high", bias: high })), 0);
  assert.equal(s.add(new SymbolTable(elf, { name: "low" })), 0);
  const hit = new SymbolHit();
  const addr = high + TEXT + 0x12n;
  assert.ok(s.lookup(Number(addr >> 32n), Number(addr & 0xffffffffn), hit));
  assert.deepEqual([hit.module, hit.moduleName, hit.name, hit.offset], [1, "high", "inner", 2]);
  assert.deepEqual([hit.startHi, hit.startLo], [0x7f00, 0x401010]);
  assert.equal(s.format(0x7f00, 0x401000), "main");
  assert.equal(s.format(0x7f00, 0x40101a), "inner+0xa");
  assert.equal(s.format(0, 0x400810), "puts@plt");
  assert.equal(s.format(0, 0x401100), "0x401100");
  assert.equal(s.format(0xffffffff, 0), "0xffffffff00000000");
});

test("a bias that wraps past 2^64 cuts the module at the wrap", () => {
  const table = new SymbolTable(parseElf(build().bytes), { bias: (1n << 64n) - TEXT - 0x40n });
  assert.equal(lookup(table, (1n << 64n) - 1n), "main+63");
  assert.equal(lookup(table, 0n), "-");
});

const LIBC = "/lib/x86_64-linux-gnu/libc.so.6";

test("lookups never throw on random addresses", () => {
  const s = new Symbolizer();
  s.add(new SymbolTable(parseElf(build().bytes)));
  if (existsSync(LIBC))
    s.add(new SymbolTable(parseElf(new Uint8Array(readFileSync(LIBC))), { bias: 0x7f0000000000n }));
  const hit = new SymbolHit();
  fc.assert(
    fc.property(fc.nat(0xffffffff), fc.nat(0xffffffff), (hi, lo) => {
      if (s.lookup(hi, lo, hit)) {
        assert.ok(hit.offset >= 0);
        assert.ok(hit.startHi < hi || (hit.startHi === hi && hit.startLo <= lo));
      }
      s.format(hi, lo);
    }),
    { numRuns: 20000 },
  );
});

test("mutated files never make the table throw or read out of bounds", () => {
  const base = build().bytes;
  const hit = new SymbolHit();
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(base.length - 1), fc.nat(255)), { minLength: 1, maxLength: 16 }),
      fc.nat(0xfff),
      (edits, probe) => {
        const bytes = base.slice();
        for (const [p, b] of edits) bytes[p] = b;
        let elf: ReturnType<typeof parseElf>;
        try {
          elf = parseElf(bytes, { strict: false });
        } catch {
          return; // the ELF reader's own errors are tested in test/image
        }
        const table = new SymbolTable(elf);
        assert.ok(table.diagnostics.length <= table.diagnosticCount);
        table.lookup(0, 0x400000 + probe, hit);
      },
    ),
    { numRuns: 3000 },
  );
});

/**
 * A file of `count` sized functions with gaps between them (sizes and gaps from a fixed
 * seed) in .text, and, with `far`, as many again in a section 2^33 bytes above.
 */
function manySymbols(count: number, far: boolean) {
  const names = Array.from({ length: 2 * count }, (_, k) => `f${k}`);
  const str = stringTable(names);
  const FAR = TEXT + (1n << 33n);
  const funcs: { name: string; start: bigint; size: bigint }[] = [];
  let seed = 12345;
  const next = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  const sections = far ? [TEXT, FAR] : [TEXT];
  const ends: bigint[] = [];
  for (const base of sections) {
    let at = base;
    for (let k = 0; k < count; k++) {
      at += BigInt(next(3) === 0 ? next(64) : 0); // a gap now and then
      const size = BigInt(1 + next(200));
      funcs.push({ name: `f${funcs.length}`, start: at, size });
      at += size;
    }
    ends.push(at + 16n);
  }
  const symtab = symbolTable(
    funcs.map((f) => [str.at(f.name), 0x12, f.start >= FAR ? 2 : 1, f.start, f.size] as const),
  );
  const code = sections.map((base, k) => ({
    name: k === 0 ? ".text" : ".text.far",
    type: SHT_PROGBITS,
    flags: 6n,
    addr: base,
    data: new Uint8Array(Number(ends[k]! - base)),
  }));
  const tables = [
    { name: ".symtab", type: 2, data: symtab },
    { name: ".strtab", type: SHT_STRTAB, data: str.bytes },
  ];
  const layout = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    sections: [...code, ...tables],
  });
  const symIndex = code.length + 1;
  new DataView(layout.bytes.buffer).setUint32(layout.shoff + symIndex * 64 + 40, symIndex + 1, true);
  return { elf: parseElf(layout.bytes), funcs, ranges: sections.map((base, k) => [base, ends[k]!] as const) };
}

test("many symbols: every address names the function covering it, near or across 2^32 and 2^64", () => {
  for (const far of [false, true]) {
    const { elf, funcs, ranges } = manySymbols(400, far);
    // Biases: none, one that puts the module across a 2^32 boundary, one across 2^64 (cut there).
    for (const bias of [0n, 0xfff00000n - TEXT, (1n << 64n) - TEXT - 0x4000n]) {
      const table = new SymbolTable(elf, { bias });
      const owner = new Map<bigint, string>();
      for (const f of funcs) for (let a = 0n; a < f.size; a++) owner.set(f.start + a, `${f.name}+${a}`);
      for (const [from, to] of ranges) {
        for (let addr = from - 4n; addr < to; addr++) {
          const run = (addr + bias) & ((1n << 64n) - 1n);
          // Past the wrap the module is cut: nothing there has a name.
          const wrapped = run < bias && bias !== 0n && addr + bias >= 1n << 64n;
          const want = wrapped ? "-" : (owner.get(addr) ?? "-");
          assert.equal(
            lookup(table, run),
            want,
            `far ${far}, bias 0x${bias.toString(16)}, 0x${addr.toString(16)}`,
          );
        }
      }
    }
  }
});

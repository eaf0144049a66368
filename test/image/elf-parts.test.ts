/**
 * ELF files read in part (readElfParts): the headers and the parts asked for are the
 * file's bytes, what was not asked for is not read, a parse of the parts says what a
 * parse of the whole file says (also of hostile headers), and symbol tables of the
 * parts are those of the whole file: on a made file with code and DWARF far apart and
 * on the corpus' real binaries and core files.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { IMAGE_AND_SYMBOLS, SYMBOL_SECTIONS, SymbolTable } from "../../src/analysis/index.js";
import { buildIdHex, type ElfFile, type ElfNeeds, readElfParts, tryParseElf } from "../../src/image/index.js";
import { pattern, writeElf } from "../../tools/elf/elf-writer.js";
import { CORPUS_DIR, corpusPath } from "../corpus.js";
import { madeElf } from "./made-elf.js";

const SHT_SYMTAB = 2;

/**
 * `bytes` read by readElfParts, and the reads it made; `whole`: it left the file to be
 * read whole (then `out` is the file, as the caller reads it).
 */
function parts(
  bytes: Uint8Array,
  needs: ElfNeeds,
): { out: Uint8Array; reads: [number, number][]; whole: boolean } {
  const reads: [number, number][] = [];
  const got = readElfParts(
    bytes.length,
    (offset, into, at, length) => {
      assert.ok(offset >= 0 && length > 0 && offset + length <= bytes.length, `read ${offset}+${length}`);
      assert.equal(at, offset);
      reads.push([offset, length]);
      into.set(bytes.subarray(offset, offset + length), at);
    },
    needs,
  );
  const out = got ?? bytes;
  assert.equal(out.length, bytes.length);
  return { out, reads, whole: got === undefined };
}

/** What a parse says, to compare: the error, or the tables and the build id. */
function parsed(bytes: Uint8Array, strict: boolean): unknown {
  const e = tryParseElf(bytes, { strict });
  if (!("sections" in e)) return e.message;
  return {
    sections: e.sections.map((s) => [s.index, s.name, s.type, s.flags, s.offset, s.size, s.link, s.info]),
    segments: e.segments.map((g) => [g.type, g.flags, g.offset, g.filesz, g.vaddrHi, g.vaddrLo, g.memsz]),
    buildId: buildIdHex(e),
    warnings: e.warnings.map((w) => w.message),
  };
}

const same = (a: Uint8Array, b: Uint8Array, from: number, to: number) =>
  Buffer.compare(a.subarray(from, to), b.subarray(from, to)) === 0;

function section(elf: ElfFile, name: string) {
  const s = elf.sections.find((x) => x.name === name);
  assert.ok(s, name);
  return s;
}

/** Every symbol of the table from `a` and from `b`, alike. */
function sameSymbols(a: Uint8Array, b: Uint8Array): number {
  const ea = tryParseElf(a, { strict: false });
  const eb = tryParseElf(b, { strict: false });
  assert.ok("sections" in ea && "sections" in eb);
  const ta = new SymbolTable(ea, { bias: 0x1000n });
  const tb = new SymbolTable(eb, { bias: 0x1000n });
  assert.equal(tb.size, ta.size);
  for (let k = 0; k < ta.size; k++) {
    assert.equal(tb.symbolName(k), ta.symbolName(k));
    assert.equal(tb.symbolStartHi(k), ta.symbolStartHi(k));
    assert.equal(tb.symbolStartLo(k), ta.symbolStartLo(k));
  }
  assert.deepEqual(
    tb.diagnostics.map((d) => d.message),
    ta.diagnostics.map((d) => d.message),
  );
  return ta.size;
}

test("a symbol table's parts: headers, symbols, names and notes read, code and DWARF not", () => {
  // (Whatever is asked for, a parse finds the section names and the build id.)
  const nothing: ElfNeeds = { section: () => false, loads: false };
  for (const note of ["section", "segment"] as const)
    for (const needs of [SYMBOL_SECTIONS, nothing]) {
      const bytes = madeElf(note);
      const { out } = parts(bytes, needs);
      assert.deepEqual(parsed(out, true), parsed(bytes, true));
      assert.equal(buildIdHex(tryParseElf(out) as ElfFile), "000102030405060708090a0b0c0d0e0f10111213", note);
    }
  const bytes = madeElf();
  const elf = tryParseElf(bytes) as ElfFile;
  const { out, reads } = parts(bytes, SYMBOL_SECTIONS);
  for (const name of [".symtab", ".strtab", ".shstrtab", ".note.gnu.build-id"]) {
    const s = section(elf, name);
    assert.ok(same(out, bytes, s.offset, s.offset + s.size), `${name} read`);
  }
  for (const name of [".text", ".debug_info", ".debug_line", ".debug_str"]) {
    const s = section(elf, name);
    assert.ok(
      out.subarray(s.offset, s.offset + s.size).every((b) => b === 0),
      `${name} not read`,
    );
  }
  const read = reads.reduce((n, [, len]) => n + len, 0);
  assert.ok(read < bytes.length / 2, `${read} of ${bytes.length} bytes read`);
  assert.equal(sameSymbols(out, bytes), 3);
});

test("an image's parts: the loadable segments too, still not the DWARF", () => {
  const bytes = madeElf();
  const elf = tryParseElf(bytes) as ElfFile;
  const { out } = parts(bytes, IMAGE_AND_SYMBOLS);
  assert.deepEqual(parsed(out, true), parsed(bytes, true));
  for (const g of elf.loads) assert.ok(same(out, bytes, g.offset, g.offset + g.filesz), "segment read");
  const dwarf = section(elf, ".debug_info");
  assert.ok(out.subarray(dwarf.offset, dwarf.offset + dwarf.size).every((b) => b === 0));
  assert.equal(sameSymbols(out, bytes), 3);
});

test("extended numbering: counts in section 0 are followed to the tables", () => {
  const bytes = madeElf();
  const elf = tryParseElf(bytes) as ElfFile;
  const v = new DataView(bytes.buffer, bytes.byteOffset);
  const shoff = Number(v.getBigUint64(0x28, true));
  const count = elf.sections.length;
  // e_shnum 0 (the count in section 0's sh_size), e_shstrndx SHN_XINDEX (in its sh_link).
  v.setUint16(0x3c, 0, true);
  v.setUint16(0x3e, 0xffff, true);
  v.setBigUint64(shoff + 32, BigInt(count), true);
  v.setUint32(shoff + 40, count - 1, true);
  const { out } = parts(bytes, SYMBOL_SECTIONS);
  assert.deepEqual(parsed(out, true), parsed(bytes, true));
  assert.equal(sameSymbols(out, bytes), 3);
});

test("hostile headers: the parts parse as the whole file does, and reads stay in the file", () => {
  const base = madeElf();
  const elf = tryParseElf(base) as ElfFile;
  const shoff = elf.headerTables.shOffset;
  // Bytes of the headers: the ELF header, the program headers, the section headers and names.
  const names = section(elf, ".shstrtab");
  const spots = [
    [0, 64],
    [elf.headerTables.phOffset, elf.headerTables.phOffset + elf.headerTables.phSize],
    [shoff, shoff + elf.headerTables.shSize],
    [names.offset, names.offset + names.size],
  ] as const;
  const edit = fc.record({
    spot: fc.nat({ max: spots.length - 1 }),
    at: fc.nat(),
    value: fc.oneof(fc.nat({ max: 255 }), fc.constant(0xff), fc.constant(0)),
    wide: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(edit, { minLength: 1, maxLength: 6 }), fc.boolean(), (edits, image) => {
      const bytes = base.slice();
      for (const e of edits) {
        const [from, to] = spots[e.spot]!;
        const at = from + (e.at % Math.max(1, to - from));
        // A wide edit fills a whole field's worth: offsets and sizes far off or past the file.
        for (let k = 0; k < (e.wide ? 8 : 1) && at + k < bytes.length; k++) bytes[at + k] = e.value;
      }
      const { out } = parts(bytes, image ? IMAGE_AND_SYMBOLS : SYMBOL_SECTIONS);
      assert.deepEqual(parsed(out, false), parsed(bytes, false));
      assert.deepEqual(parsed(out, true), parsed(bytes, true));
    }),
    {
      numRuns: Number(process.env.PTKIT_ELF_PARTS_RUNS ?? 400),
      // Found by CI's run: a bad section after .shstrtab left the parse no sections, so the
      // names went unread, and section 1's unterminated name went unseen.
      examples: [
        [
          [
            { spot: 2, at: 678850708, value: 1, wide: true },
            { spot: 2, at: 1581024337, value: 0, wide: true },
            { spot: 1, at: 0, value: 0, wide: false },
          ],
          false,
        ],
      ],
    },
  );
});

test("the corpus' binaries and core files: parts parse and name as the whole files do", (t) => {
  const root = corpusPath("real");
  if (root === undefined) {
    t.skip(`corpus absent at ${CORPUS_DIR} (set PTKIT_CORPUS)`);
    return;
  }
  let files = 0;
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.size >= 64 && st.size < 64 << 20) {
        const bytes = new Uint8Array(readFileSync(path));
        if (bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) continue;
        files++;
        for (const needs of [SYMBOL_SECTIONS, IMAGE_AND_SYMBOLS]) {
          const { out } = parts(bytes, needs);
          assert.deepEqual(parsed(out, false), parsed(bytes, false), path);
          const elf = tryParseElf(bytes, { strict: false });
          if (!("sections" in elf)) continue;
          if (needs.loads)
            for (const g of elf.loads) assert.ok(same(out, bytes, g.offset, g.offset + g.filesz), path);
          if (elf.sections.some((s) => s.type === SHT_SYMTAB)) sameSymbols(out, bytes);
        }
      }
    }
  };
  walk(root);
  assert.ok(files >= 5, `${files} ELF files in the corpus`);
});

test("an image of a file without loadable segments (an object file) is left to be read whole", () => {
  const l = writeElf({
    is64: true,
    le: true,
    type: 1,
    sections: [
      { name: ".text", flags: 6n, data: pattern(200_000, 3) },
      { name: ".debug_info", data: pattern(200_000, 4) },
    ],
  });
  assert.equal(parts(l.bytes, IMAGE_AND_SYMBOLS).whole, true);
  // Its symbols alone are not all of it.
  const symbols = parts(l.bytes, SYMBOL_SECTIONS);
  assert.equal(symbols.whole, false);
  assert.ok(Buffer.compare(symbols.out, l.bytes) !== 0);
});

test("no ELF file: left to be read whole after its first bytes (its parse says why)", () => {
  const { whole, reads } = parts(new Uint8Array(1 << 20).fill(0x41), SYMBOL_SECTIONS);
  assert.equal(whole, true);
  assert.deepEqual(reads, [[0, 4096]]);
});

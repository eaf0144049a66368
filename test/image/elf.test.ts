/**
 * The ELF reader on files built by the test writer (ELF32/64, LE/BE, EXEC/DYN, zero
 * fill, extended counts) and on malformed ones, each error checked for its field,
 * offset and message.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  buildIdHex,
  ElfType,
  MAX_NOTES,
  parseElf,
  segmentFlagsString,
  tryParseElf,
} from "../../src/image/elf.js";
import {
  buildIdNote,
  ET_DYN,
  ET_EXEC,
  PF_R,
  PF_W,
  PF_X,
  PT_INTERP,
  PT_LOAD,
  PT_NOTE,
  pattern,
  type SegSpec,
  SHT_NOTE,
  sampleElf,
  writeElf,
} from "../../tools/elf/elf-writer.js";
import { big, checkOutcome, expectElfError } from "./helpers.js";

const COMBOS = [
  { is64: true, le: true },
  { is64: true, le: false },
  { is64: false, le: true },
  { is64: false, le: false },
];
const name = (c: { is64: boolean; le: boolean }) => `ELF${c.is64 ? 64 : 32} ${c.le ? "LE" : "BE"}`;

describe("well-formed files from the test writer", () => {
  for (const c of COMBOS) {
    for (const type of [ET_EXEC, ET_DYN]) {
      test(`${name(c)} ${type === ET_EXEC ? "EXEC" : "DYN"}: header, PT_LOADs, sections, build-id`, () => {
        const base = type === ET_DYN ? 0n : c.is64 ? 0x400000n : 0x8048000n;
        const l = sampleElf(c.is64, c.le, type, base);
        const elf = parseElf(l.bytes);
        assert.equal(elf.is64, c.is64);
        assert.equal(elf.littleEndian, c.le);
        assert.equal(elf.type, type);
        assert.equal(elf.relocatable, type === ET_DYN);
        assert.equal(elf.hasDynamic, type === ET_DYN);
        assert.equal(elf.hasInterp, false);
        assert.equal(elf.machine, c.is64 ? 62 : 3);
        assert.equal(big(elf.entryHi, elf.entryLo), base + 0x10n);
        assert.equal(elf.segments.length, type === ET_DYN ? 5 : 4);
        assert.deepEqual(
          elf.loads.map((s) => [
            big(s.vaddrHi, s.vaddrLo),
            s.offset,
            s.filesz,
            s.memsz,
            segmentFlagsString(s.flags),
          ]),
          [
            [base, l.segOffsets[0], 0x180, 0x180, "R E"],
            [base + 0x1000n, l.segOffsets[1], 0x40, 0x40, "R  "],
            [base + 0x2000n, l.segOffsets[2], 0x30, 0x1000, "RW "],
          ],
        );
        assert.deepEqual(
          elf.sections.map((s) => s.name),
          ["", ".text", ".rodata", ".data", ".bss", ".note.gnu.build-id", ".shstrtab"],
        );
        const text = elf.sections[1]!;
        assert.equal(big(text.addrHi, text.addrLo), base);
        assert.equal(text.offset, l.secOffsets[1]);
        assert.equal(text.size, 0x180);
        assert.equal(elf.sections[4]!.type, 8);
        assert.equal(elf.sections[4]!.size, 0xfd0);
        assert.equal(
          buildIdHex(elf),
          Array.from({ length: 20 }, (_, i) => ((i * 17 + 3) & 0xff).toString(16).padStart(2, "0")).join(""),
        );
        assert.deepEqual(elf.warnings, []);
      });
    }
  }

  test("PT_INTERP and PT_DYNAMIC: a PIE", () => {
    const interp = new TextEncoder().encode("/lib64/ld-linux-x86-64.so.2\0");
    const l = writeElf({
      is64: true,
      le: true,
      type: ET_DYN,
      segments: [
        { type: PT_INTERP, vaddr: 0x318n, data: interp },
        { flags: PF_R | PF_X, vaddr: 0n, data: pattern(64, 9) },
        { type: 2, flags: PF_R | PF_W, vaddr: 0x3000n, data: pattern(16, 10) },
      ],
    });
    const elf = parseElf(l.bytes);
    assert.equal(elf.type, ElfType.Dyn);
    assert.ok(elf.relocatable && elf.hasInterp && elf.hasDynamic);
    assert.equal(elf.loads.length, 1);
    assert.equal(elf.buildId, undefined);
  });

  test("p_memsz far beyond p_filesz is parsed without allocating it", () => {
    const l = writeElf({
      is64: true,
      le: true,
      segments: [{ flags: PF_R | PF_W, vaddr: 0x10000n, data: pattern(8, 1), memsz: 1n << 52n }],
    });
    const elf = parseElf(l.bytes);
    assert.equal(elf.loads[0]!.memsz, 2 ** 52);
    assert.ok(l.bytes.length < 4096);
  });

  test("kernel addresses stay exact", () => {
    const base = 0xffffffff81000000n;
    const l = writeElf({
      is64: true,
      le: true,
      entry: base + 0x1234n,
      segments: [
        { flags: PF_R | PF_X, vaddr: base, data: pattern(0x100, 2) },
        // The very top of the address space: the last byte is 0xffffffffffffffff.
        { flags: PF_R, vaddr: 0xfffffffffffff000n, data: pattern(0x10, 3), memsz: 0x1000n },
      ],
      sections: [{ name: ".text", addr: base, data: pattern(0x100, 2) }],
    });
    const elf = parseElf(l.bytes);
    assert.equal(big(elf.entryHi, elf.entryLo), base + 0x1234n);
    assert.equal(big(elf.loads[0]!.vaddrHi, elf.loads[0]!.vaddrLo), base);
    assert.equal(big(elf.loads[1]!.vaddrHi, elf.loads[1]!.vaddrLo), 0xfffffffffffff000n);
    assert.equal(big(elf.sections[1]!.addrHi, elf.sections[1]!.addrLo), base);
  });

  test("PN_XNUM, e_shnum 0 and SHN_XINDEX read the counts from section header 0", () => {
    for (const c of COMBOS) {
      const l = sampleElf(c.is64, c.le);
      const want = parseElf(l.bytes);
      const b = l.bytes.slice();
      const v = new DataView(b.buffer);
      const f = c.is64 ? { phnum: 56, shnum: 60, shstrndx: 62 } : { phnum: 44, shnum: 48, shstrndx: 50 };
      const s0 = l.shoff;
      v.setUint16(f.phnum, 0xffff, c.le);
      v.setUint32(s0 + (c.is64 ? 44 : 28), want.segments.length, c.le); // sh_info
      v.setUint16(f.shnum, 0, c.le);
      if (c.is64) v.setBigUint64(s0 + 32, BigInt(want.sections.length), c.le);
      else v.setUint32(s0 + 20, want.sections.length, c.le); // sh_size
      v.setUint16(f.shstrndx, 0xffff, c.le);
      v.setUint32(s0 + (c.is64 ? 40 : 24), l.shstrndx, c.le); // sh_link
      const got = parseElf(b);
      assert.deepEqual(got.segments, want.segments);
      assert.deepEqual(
        got.sections.map((s) => s.name),
        want.sections.map((s) => s.name),
      );
    }
  });

  test("no section header table: no sections, build-id from PT_NOTE", () => {
    const l = writeElf({
      is64: false,
      le: false,
      segments: [{ vaddr: 0x1000n, data: pattern(32, 1) }],
      buildId: Uint8Array.of(1, 2, 3),
      noSections: true,
    });
    const elf = parseElf(l.bytes);
    assert.deepEqual(elf.sections, []);
    assert.equal(buildIdHex(elf), "010203");
  });

  test("random layouts round-trip (property)", () => {
    const seg = fc.record({
      gap: fc.oneof(fc.bigInt({ min: 0n, max: 0x10000n }), fc.bigInt({ min: 0n, max: 1n << 40n })),
      filesz: fc.integer({ min: 0, max: 300 }),
      extra: fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 1n << 36n })),
      flags: fc.integer({ min: 0, max: 7 }),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(...COMBOS),
        fc.oneof(
          fc.constant(0n),
          fc.constant(0xffffffff81000000n),
          fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        ),
        fc.array(seg, { maxLength: 6 }),
        fc.option(fc.uint8Array({ minLength: 1, maxLength: 40 }), { nil: undefined }),
        (c, anchor, specs, id) => {
          const limit = c.is64 ? 1n << 64n : 1n << 32n;
          let at = c.is64 ? anchor : anchor & 0xffffffffn;
          const segments: SegSpec[] = [];
          specs.forEach((s, i) => {
            at += s.gap;
            const memsz = BigInt(s.filesz) + (c.is64 ? s.extra : s.extra & 0xffffn);
            if (at + memsz > limit) return;
            segments.push({ type: PT_LOAD, flags: s.flags, vaddr: at, data: pattern(s.filesz, i), memsz });
            at += memsz;
          });
          const l = writeElf({ ...c, segments, buildId: id });
          const elf = parseElf(l.bytes);
          assert.equal(elf.loads.length, segments.length);
          elf.loads.forEach((s, i) => {
            const want = segments[i]!;
            assert.equal(big(s.vaddrHi, s.vaddrLo), want.vaddr);
            assert.equal(s.filesz, want.data!.length);
            assert.equal(BigInt(s.memsz), want.memsz);
            assert.equal(s.flags, want.flags);
            assert.deepEqual(l.bytes.subarray(s.offset, s.offset + s.filesz), want.data);
          });
          assert.deepEqual(elf.buildId, id);
        },
      ),
      { numRuns: 500 },
    );
  });

  test("tryParseElf returns the error", () => {
    const r = tryParseElf(new Uint8Array(3));
    assert.ok(!("loads" in r));
    assert.equal(r.field, "e_ident");
  });
});

describe("malformed files: each error names the field and its offset", () => {
  /** ELF64 LE sample with a patch applied. */
  const patched = (
    is64: boolean,
    le: boolean,
    patch: (v: DataView, l: ReturnType<typeof sampleElf>) => void,
  ) => {
    const l = sampleElf(is64, le);
    const b = l.bytes.slice();
    patch(new DataView(b.buffer), l);
    return { b, l };
  };

  test("ELF header: truncation, magic, class, data, version, sizes", () => {
    const l = sampleElf(true, true);
    expectElfError(
      l.bytes.subarray(0, 10),
      "e_ident",
      10,
      "ELF header: e_ident truncated, file size 0xa < 0x10",
    );
    expectElfError(new Uint8Array(0), "e_ident", 0);
    const bad = l.bytes.slice();
    bad[1] = 0x46;
    expectElfError(bad, "EI_MAG", 0, /not an ELF file/);
    const cls = l.bytes.slice();
    cls[4] = 3;
    expectElfError(cls, "EI_CLASS", 4, /e_ident\[EI_CLASS\] 0x3 is neither/);
    const data = l.bytes.slice();
    data[5] = 0;
    expectElfError(data, "EI_DATA", 5);
    const ver = l.bytes.slice();
    ver[6] = 2;
    expectElfError(ver, "EI_VERSION", 6);
    expectElfError(
      l.bytes.subarray(0, 40),
      "ELF header",
      40,
      "ELF header: truncated, file size 0x28 < 0x40 (ELF64 header)",
    );
    expectElfError(
      sampleElf(false, false).bytes.subarray(0, 51),
      "ELF header",
      51,
      /< 0x34 \(ELF32 header\)/,
    );
    const { b: ev } = patched(true, true, (v) => v.setUint32(20, 0, true));
    expectElfError(ev, "e_version", 20);
    const { b: eh } = patched(false, false, (v) => v.setUint16(40, 20, false));
    expectElfError(eh, "e_ehsize", 40, /e_ehsize 0x14 smaller than the ELF32 header \(0x34\)/);
  });

  test("program header table: entry size, bounds, overlap with the ELF header", () => {
    const { b: es } = patched(true, false, (v) => v.setUint16(54, 32, false));
    expectElfError(es, "e_phentsize", 54, /e_phentsize 0x20 smaller than an ELF64 program header \(0x38\)/);
    const { b: off, l } = patched(true, true, (v) => v.setBigUint64(32, 0xfffffffffff0n, true));
    expectElfError(
      off,
      "e_phoff",
      32,
      `program header table: e_phoff 0xfffffffffff0 + e_phnum 4 * e_phentsize 0x38 beyond file size 0x${l.bytes.length.toString(16)}`,
    );
    const { b: huge } = patched(true, true, (v) => v.setBigUint64(32, 0xffffffffffffffc0n, true));
    expectElfError(huge, "e_phoff", 32, /e_phoff 0xffffffffffffffc0 \+/);
    const { b: ov } = patched(false, true, (v) => v.setUint32(28, 8, true));
    expectElfError(ov, "e_phoff", 28, "program header table at e_phoff 0x8 overlaps the ELF header");
  });

  test("program headers: file range, memsz, wrap, overlap (ELF64 LE and ELF32 BE)", () => {
    // ELF64 LE: program header 1 at 64 + 56.
    const p1 = 64 + 56;
    const { b, l } = patched(true, true, (v, l) =>
      v.setBigUint64(p1 + 8, BigInt(l.bytes.length - 0x10), true),
    );
    const size = l.bytes.length.toString(16);
    expectElfError(
      b,
      "p_offset",
      p1 + 8,
      `program header 1: p_offset 0x${(l.bytes.length - 0x10).toString(16)} + p_filesz 0x40 beyond file size 0x${size}`,
    );
    const { b: fs } = patched(true, true, (v) => v.setBigUint64(p1 + 32, 0xffffffffffffffffn, true));
    expectElfError(
      fs,
      "p_filesz",
      p1 + 32,
      `program header 1: p_filesz 0xffffffffffffffff beyond file size 0x${size}`,
    );
    const { b: po } = patched(true, true, (v) => v.setBigUint64(p1 + 8, 0x123456789abcdefn, true));
    expectElfError(po, "p_offset", p1 + 8, /p_offset 0x123456789abcdef beyond file size/);
    const { b: ms } = patched(true, true, (v) => v.setBigUint64(p1 + 40, 0x3fn, true));
    expectElfError(
      ms,
      "p_memsz",
      p1 + 40,
      "program header 1: PT_LOAD p_memsz 0x3f smaller than p_filesz 0x40",
    );
    const { b: ab } = patched(true, true, (v) => v.setBigUint64(p1 + 40, 1n << 60n, true));
    expectElfError(ab, "p_memsz", p1 + 40, /p_memsz 0x1000000000000000 absurd/);
    const { b: wr } = patched(true, true, (v) => v.setBigUint64(p1 + 16, 0xffffffffffffffe0n, true));
    expectElfError(
      wr,
      "p_memsz",
      p1 + 40,
      "program header 1: PT_LOAD p_vaddr 0xffffffffffffffe0 + p_memsz 0x40 wraps past 2^64",
    );
    const { b: ol } = patched(true, true, (v) => v.setBigUint64(p1 + 16, 0x400100n, true));
    expectElfError(
      ol,
      "p_vaddr",
      p1 + 16,
      "program header 1: PT_LOAD p_vaddr 0x400100 + p_memsz 0x40 overlaps program header 0 (p_vaddr 0x400000 + p_memsz 0x180)",
    );
    // ELF32 BE: program header 2 at 52 + 64; p_offset at +4, p_memsz at +20.
    const q2 = 52 + 64;
    const { b: b32, l: l32 } = patched(false, false, (v) => v.setUint32(q2 + 4, 0xfffffff0, false));
    expectElfError(
      b32,
      "p_offset",
      q2 + 4,
      `program header 2: p_offset 0xfffffff0 beyond file size 0x${l32.bytes.length.toString(16)}`,
    );
    const { b: m32 } = patched(false, false, (v) => v.setUint32(q2 + 20, 0x10, false));
    expectElfError(m32, "p_memsz", q2 + 20, /p_memsz 0x10 smaller than p_filesz 0x30/);
    // A PT_NULL entry's fields are not checked.
    const { b: nul } = patched(true, true, (v) => {
      v.setUint32(p1, 0, true);
      v.setBigUint64(p1 + 8, 0xffffffffffffffffn, true);
    });
    assert.equal(parseElf(nul).loads.length, 2);
  });

  test("section headers: table bounds, shstrndx, names", () => {
    const { b: es } = patched(true, true, (v) => v.setUint16(58, 10, true));
    expectElfError(es, "e_shentsize", 58);
    const { b: sn, l } = patched(true, true, (v) => v.setUint16(60, 500, true));
    expectElfError(
      sn,
      "e_shnum",
      60,
      /section header table: e_shoff 0x[0-9a-f]+ \+ e_shnum 500 \* e_shentsize 0x40 beyond/,
    );
    const { b: so } = patched(false, true, (v) => v.setUint32(32, 0xffffff00, true));
    expectElfError(so, "e_shoff", 32);
    const { b: nosh } = patched(true, true, (v) => v.setBigUint64(40, 0n, true));
    expectElfError(nosh, "e_shnum", 60, "ELF header: e_shnum 7 but no section header table (e_shoff 0)");
    const { b: ix } = patched(true, true, (v) => v.setUint16(62, 99, true));
    expectElfError(ix, "e_shstrndx", 62, "ELF header: e_shstrndx 99 not below the section count 7");
    const strHdr = l.shoff + l.shstrndx * 64;
    const { b: st } = patched(true, true, (v) => v.setUint32(strHdr + 4, 1, true));
    expectElfError(st, "sh_type", strHdr + 4, "section 6 (e_shstrndx): sh_type 0x1 is not SHT_STRTAB (3)");
    const text = l.shoff + 64;
    const { b: nm } = patched(true, true, (v) => v.setUint32(text, 0x1000, true));
    expectElfError(nm, "sh_name", text, /section 1: sh_name 0x1000 beyond \.shstrtab size 0x/);
    // The last string loses its NUL: ".shstrtab" (section 6) is unterminated.
    const { b: un } = patched(true, true, (v, l) => {
      const strOff = Number(v.getBigUint64(strHdr + 24, true));
      const strSize = Number(v.getBigUint64(strHdr + 32, true));
      v.setUint8(strOff + strSize - 1, 0x78);
      assert.ok(l.names.length === 7);
    });
    expectElfError(un, "sh_name", strHdr, "section 6: sh_name 0x2d is not NUL-terminated inside .shstrtab");
    const { b: ss } = patched(true, true, (v) => v.setBigUint64(text + 32, 0x100000n, true));
    expectElfError(
      ss,
      "sh_offset",
      text + 24,
      /section 1: sh_offset 0x[0-9a-f]+ \+ sh_size 0x100000 beyond file size/,
    );
    const bss = l.shoff + 4 * 64;
    const { b: nb } = patched(true, true, (v) => v.setBigUint64(bss + 32, 1n << 62n, true));
    expectElfError(nb, "sh_size", bss + 32, /section 4: sh_size 0x4000000000000000 absurd/);
    // SHT_NOBITS may be large and point anywhere.
    const { b: nb2 } = patched(true, true, (v) => {
      v.setBigUint64(bss + 32, 1n << 40n, true);
      v.setBigUint64(bss + 24, 0xffffffffffffn, true);
    });
    assert.equal(parseElf(nb2).sections[4]!.size, 2 ** 40);
  });

  test("notes: truncated header, n_namesz, n_descsz, note count limit", () => {
    const l = sampleElf(true, true);
    const n = l.noteOffset;
    const { b: nz } = patched(true, true, (v) => v.setUint32(n, 0x100, true));
    expectElfError(
      nz,
      "n_namesz",
      n,
      /program header 3 \(PT_NOTE\): note at 0x[0-9a-f]+: n_namesz 0x100 beyond note end/,
    );
    const { b: dz } = patched(true, true, (v) => v.setUint32(n + 4, 0xffffffff, true));
    expectElfError(dz, "n_descsz", n + 4, /n_descsz 0xffffffff beyond note end/);
    // A PT_NOTE of 13 bytes: one empty note, then 1 byte.
    const t = writeElf({
      is64: true,
      le: true,
      segments: [{ type: PT_NOTE, vaddr: 0n, data: new Uint8Array(13), align: 4n }],
    });
    expectElfError(t.bytes, "note", t.segOffsets[0]! + 12, /note at 0x[0-9a-f]+ truncated, 1 bytes left/);
    // MAX_NOTES + 1 empty notes: stopped by the limit.
    const many = writeElf({
      is64: true,
      le: true,
      segments: [{ type: PT_NOTE, vaddr: 0n, data: new Uint8Array(12 * (MAX_NOTES + 1)), align: 4n }],
    });
    expectElfError(many.bytes, "note", many.segOffsets[0]! + 12 * MAX_NOTES, /more than 65536 notes/);
  });

  test("notes at an odd file offset: padding counts from the notes' start (BOLT's .note.bolt_info)", () => {
    // A gold-version note of 403 bytes (as BOLT writes), then a build id: 12 + 4 + 404 and
    // 12 + 4 + 20 bytes, in a section whose data starts one byte into what writeElf placed.
    const text = new Uint8Array(12 + 4 + 404);
    const v = new DataView(text.buffer);
    v.setUint32(0, 4, true);
    v.setUint32(4, 403, true);
    v.setUint32(8, 4, true);
    text.set([0x47, 0x4e, 0x55, 0], 12);
    const id = Uint8Array.from({ length: 20 }, (_, i) => 0xa0 + i);
    const notes = new Uint8Array([0, ...text, ...buildIdNote(id, true)]);
    const l = writeElf({
      is64: true,
      le: true,
      sections: [{ name: ".note.bolt_info", type: SHT_NOTE, data: notes, addralign: 1n }],
    });
    const sh = l.shoff + 64;
    const w = new DataView(l.bytes.buffer);
    w.setBigUint64(sh + 24, BigInt(l.secOffsets[1]! + 1), true);
    w.setBigUint64(sh + 32, BigInt(notes.length - 1), true);
    const elf = parseElf(l.bytes);
    assert.equal(elf.sections[1]!.offset % 4, 1);
    assert.equal(buildIdHex(elf), "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3");
  });

  test("strict: false keeps the segments and reports section and note problems as warnings", () => {
    const { b } = patched(true, true, (v) => v.setUint16(62, 99, true));
    const elf = parseElf(b, { strict: false });
    assert.equal(elf.loads.length, 3);
    assert.deepEqual(elf.sections, []);
    assert.equal(elf.warnings.length, 1);
    assert.equal(elf.warnings[0]!.field, "e_shstrndx");
    // With a broken table the build-id is still found in PT_NOTE.
    assert.equal(elf.buildId?.length, 20);
    const l = sampleElf(true, true);
    const { b: nz } = patched(true, true, (v) => v.setUint32(l.noteOffset, 0x100, true));
    const e2 = parseElf(nz, { strict: false });
    assert.equal(e2.warnings[0]!.field, "n_namesz");
    assert.equal(e2.sections.length, 7);
    // Program header errors stay fatal.
    const { b: ph } = patched(true, true, (v) => v.setBigUint64(32, 1n << 40n, true));
    expectElfError(ph, "e_phoff", 32, undefined, { strict: false });
  });

  test("every error of every single-field corruption is well-formed", () => {
    for (const c of COMBOS) {
      const l = sampleElf(c.is64, c.le);
      for (let p = 0; p < l.bytes.length; p++) {
        for (const x of [0x00, 0xff, 0x80, 0x01]) {
          const b = l.bytes.slice();
          b[p] = x;
          checkOutcome(b);
          checkOutcome(b, false);
        }
      }
    }
  });
});

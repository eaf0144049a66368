/**
 * Hostile input for the ELF reader: random bytes, random corruptions of valid files
 * and every truncation. parseElf must return a sound ElfFile or throw an ElfError that
 * names a field at an offset inside the file; never another exception, never a hang.
 * Whatever parses must also load into an Image whose reads give the file's bytes.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ElfError, type ElfFile, parseElf } from "../../src/image/elf.js";
import { Image, ImageHit } from "../../src/image/image.js";
import { ET_DYN, ET_EXEC, PT_LOAD, PT_NOTE, sampleElf, writeElf } from "../../tools/elf/elf-writer.js";
import { checkOutcome } from "./helpers.js";

const RUNS = 3000;
const SAMPLES = [true, false].flatMap((is64) =>
  [true, false].flatMap((le) => [ET_EXEC, ET_DYN].map((t) => sampleElf(is64, le, t).bytes)),
);

/** Values that break bounds arithmetic. */
const NASTY = [
  0n,
  1n,
  0x10n,
  0x34n,
  0x38n,
  0x40n,
  0xffn,
  0xfffen,
  0xffffn,
  0x7fffffffn,
  0x80000000n,
  0xfffffff0n,
  0xffffffffn,
  0x100000000n,
  (1n << 53n) - 1n,
  1n << 53n,
  0x7fffffffffffffffn,
  0xffffffffffffff00n,
  0xffffffffffffffffn,
];

/** Whatever parsed loads into an image whose reads give back the file bytes of each PT_LOAD. */
function checkImage(elf: ElfFile): void {
  const image = new Image();
  const added = image.addElf(elf);
  if (added < 0) return;
  const hit = new ImageHit();
  const out = new Uint8Array(16);
  for (const s of elf.loads) {
    if (s.filesz === 0) continue;
    // The first byte of a segment maps to its first file byte unless a later segment replaced it.
    const n = image.read(s.vaddrHi, s.vaddrLo, out, Math.min(16, s.filesz));
    assert.ok(n >= 1 || n === -13);
    assert.ok(image.find(s.vaddrHi, s.vaddrLo, hit) === 0);
    assert.ok(hit.offset >= 0 && hit.offset + hit.available <= hit.bytes.length);
  }
}

function outcome(bytes: Uint8Array): void {
  const r = checkOutcome(bytes);
  if (!(r instanceof ElfError)) checkImage(r);
  const lenient = checkOutcome(bytes, false);
  if (!(lenient instanceof ElfError)) checkImage(lenient);
}

const header = fc
  .tuple(fc.constantFrom(1, 2), fc.constantFrom(1, 2))
  .map(([c, d]) => [0x7f, 0x45, 0x4c, 0x46, c, d, 1]);

describe("ELF reader fuzz", () => {
  test("random bytes, with and without a valid e_ident", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 256 }),
          fc
            .tuple(header, fc.uint8Array({ maxLength: 600 }))
            .map(([h, rest]) => Uint8Array.from([...h, ...rest])),
        ),
        (bytes) => outcome(bytes),
      ),
      { numRuns: RUNS },
    );
  });

  test("random corruptions of valid files", () => {
    const word = fc.record({
      at: fc.nat(),
      width: fc.constantFrom(1, 2, 4, 8),
      value: fc.oneof(fc.constantFrom(...NASTY), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n })),
      le: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(...SAMPLES),
        fc.array(word, { minLength: 1, maxLength: 6 }),
        fc.nat(),
        (base, edits, cut) => {
          const b = base.slice();
          const v = new DataView(b.buffer);
          for (const e of edits) {
            const at = e.at % b.length;
            if (at + e.width > b.length) continue;
            if (e.width === 1) v.setUint8(at, Number(e.value & 0xffn));
            else if (e.width === 2) v.setUint16(at, Number(e.value & 0xffffn), e.le);
            else if (e.width === 4) v.setUint32(at, Number(e.value & 0xffffffffn), e.le);
            else v.setBigUint64(at, e.value, e.le);
          }
          outcome(b);
          outcome(b.subarray(0, cut % (b.length + 1)));
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("corrupted header fields of every ELF structure (aligned words)", () => {
    // Aligned overwrites of every 2/4/8-byte field position with each nasty value.
    for (const base of SAMPLES.slice(0, 4)) {
      for (let at = 0; at + 2 <= base.length; at += 2) {
        for (const value of NASTY) {
          for (const width of [2, 4, 8]) {
            if (at % width !== 0 || at + width > base.length) continue;
            const b = base.slice();
            const v = new DataView(b.buffer);
            const le = b[5] === 1;
            if (width === 2) v.setUint16(at, Number(value & 0xffffn), le);
            else if (width === 4) v.setUint32(at, Number(value & 0xffffffffn), le);
            else v.setBigUint64(at, value, le);
            checkOutcome(b);
          }
        }
      }
    }
  });

  test("every truncation of every sample file", () => {
    for (const base of SAMPLES) {
      let ok = 0;
      for (let n = 0; n <= base.length; n++) {
        const r = checkOutcome(base.subarray(0, n));
        if (!(r instanceof ElfError)) ok++;
        // Copy too, so that nothing past the end is reachable through the buffer.
        checkOutcome(base.slice(0, n));
      }
      assert.equal(ok, 1, "only the whole file parses");
    }
  });

  const LS = "/bin/ls";
  test(`every truncation of ${LS}`, {
    skip: existsSync(LS) ? false : `${LS} is absent`,
    timeout: 300_000,
  }, () => {
    const bytes = new Uint8Array(readFileSync(LS));
    const fields = new Map<string, number>();
    for (let n = 0; n < bytes.length; n++) {
      const r = checkOutcome(bytes.subarray(0, n));
      assert.ok(r instanceof ElfError, `truncated to ${n}`);
      fields.set(r.field, (fields.get(r.field) ?? 0) + 1);
    }
    assert.ok(!(checkOutcome(bytes) instanceof ElfError));
    // The section header table is last in the file: most truncations cut it.
    assert.ok(fields.has("e_ident") && fields.has("ELF header") && fields.has("e_shoff"));
  });

  test("adversarial sizes stay fast: 65534 program headers, note floods, long names", () => {
    const t0 = performance.now();
    // 65534 program headers: disjoint PT_LOADs plus PT_NOTEs that all cover the same notes.
    const phnum = 0xfffe; // 0xffff is PN_XNUM
    const segs = Array.from({ length: phnum }, (_, i) =>
      i % 2 === 0
        ? { type: PT_LOAD, vaddr: BigInt(i) << 12n, memsz: 0x1000n }
        : { type: PT_NOTE, vaddr: 0n, align: 4n },
    );
    const l = writeElf({ is64: true, le: true, segments: segs, noSections: true });
    // Point every PT_NOTE at one 96 KiB run of empty notes: the note budget stops it.
    const b = new Uint8Array(l.bytes.length + 12 * 8192);
    b.set(l.bytes);
    const v = new DataView(b.buffer);
    for (let i = 1; i < phnum; i += 2) {
      const p = l.phoff + i * 56;
      v.setBigUint64(p + 8, BigInt(l.bytes.length), true);
      v.setBigUint64(p + 32, BigInt(12 * 8192), true);
    }
    const r = checkOutcome(b);
    assert.ok(r instanceof ElfError && r.field === "note");
    // Without the notes it parses, with 32767 PT_LOADs.
    const plain = writeElf({ is64: true, le: true, segments: segs.filter((s) => s.type === PT_LOAD) });
    assert.equal(parseElf(plain.bytes).loads.length, 32767);
    // 20000 sections whose names all start inside one 1 MiB unterminated-until-the-end string.
    const name = "x".repeat(1 << 20);
    const secs = Array.from({ length: 2000 }, (_, i) => ({
      name: i === 0 ? name : `s${i}`,
      data: new Uint8Array(0),
    }));
    const many = writeElf({ is64: true, le: true, sections: secs });
    const mv = new DataView(many.bytes.buffer);
    for (let i = 1; i <= 2000; i++) mv.setUint32(many.shoff + i * 64, 1 + (i % 1000), true);
    const elf = parseElf(many.bytes);
    assert.equal(elf.sections.length, 2002);
    assert.ok(performance.now() - t0 < 20_000);
  });
});

/**
 * decodeInsn's tables (ild.ts) against iced-x86's decoder, field by field: wherever
 * iced decodes an instruction of libipt's length, InsnInfo (length, class, flags,
 * target) must be what iced says (test/isa/iced-oracle.ts), over every one- and
 * two-byte opcode with every ModRM under the prefixes that change a class, random bytes
 * in 16-, 32- and 64-bit code, and real x86 code (the libipt conformance images and an
 * ELF from the corpus, at every byte offset). Where iced rejects the bytes (an
 * undefined encoding, LOCK where it is not allowed, ...) the class is libipt's
 * (test/isa/ild-libipt.test.ts checks those against libipt itself): never one that
 * only a defined encoding has (XBEGIN, HLT, MWAIT, ...).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import { parseElf } from "../../src/image/elf.js";
import { decodeInsn } from "../../src/isa/decode.js";
import { jmpabsLength } from "../../src/isa/jmpabs.js";
import { ExecMode, INSN_CLASS_NAMES, InsnClass, InsnInfo } from "../../src/isa/types.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { icedAnswer } from "./iced-oracle.js";

const { Bits16, Bits32, Bits64 } = ExecMode;

/** Classes only a defined encoding has: libipt's tables never give them. */
const DEFINED_ONLY = new Set<InsnClass>([
  InsnClass.Xbegin,
  InsnClass.Xabort,
  InsnClass.Xend,
  InsnClass.Mwait,
  InsnClass.Hlt,
]);

interface Tally {
  compared: number;
  rejected: number;
  problems: string[];
}

const newTally = (): Tally => ({ compared: 0, rejected: 0, problems: [] });
const out = new InsnInfo();

const hexOf = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");

/** Compare one instruction (the start of `bytes`) at IP hi:lo; problems go to the tally. */
function compare(t: Tally, bytes: Uint8Array, mode: ExecMode, hi: number, lo: number): void {
  if (mode === Bits16) lo &= 0xffff;
  if (mode !== Bits64) hi = 0;
  const status = decodeInsn(bytes, 0, hi, lo, mode, out);
  if (status <= 0) return; // lengths and failures: fuzz.test.ts, ild-libipt.test.ts
  const got = {
    length: out.length,
    iclass: out.iclass,
    flags: out.flags,
    targetHi: out.targetHi,
    targetLo: out.targetLo,
  };
  const want = icedAnswer(bytes, mode, hi, lo);
  const jmpabs = mode === Bits64 && jmpabsLength(bytes, 0, bytes.length) > 0; // newer than iced: jmpabs.test.ts
  if (!want || want.length !== status || jmpabs) {
    t.rejected++;
    if (DEFINED_ONLY.has(out.iclass) && t.problems.length < 20)
      t.problems.push(
        `mode ${mode} [${hexOf(bytes.subarray(0, status))}]: iced rejects it, ptkit says ${INSN_CLASS_NAMES[out.iclass]}`,
      );
    return;
  }
  t.compared++;
  if (
    (got.iclass !== want.iclass ||
      got.flags !== want.flags ||
      got.targetHi !== want.targetHi ||
      got.targetLo !== want.targetLo) &&
    t.problems.length < 20
  ) {
    const show = (a: typeof got) =>
      `${INSN_CLASS_NAMES[a.iclass]} flags ${a.flags} target ${a.targetHi.toString(16)}:${a.targetLo.toString(16)}`;
    t.problems.push(
      `mode ${mode} [${hexOf(bytes.subarray(0, status))}] at ${hi.toString(16)}:${lo.toString(16)}: ptkit ${show(got)}, iced ${show(want)}`,
    );
  }
}

test("every one- and two-byte opcode, every ModRM, under the prefixes that pick an encoding", () => {
  const prefixes = [
    [],
    [0x66],
    [0x67],
    [0xf2],
    [0xf3],
    [0xf0],
    [0x66, 0xf3],
    [0xf3, 0x66],
    [0xf2, 0xf3],
    [0x48],
    [0x48, 0x66],
  ];
  const tail = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0];
  const t = newTally();
  const buf = new Uint8Array(15);
  for (const mode of [Bits16, Bits32, Bits64])
    for (const prefix of prefixes) {
      if (prefix[0] === 0x48 && mode !== Bits64) continue; // INC/DEC elsewhere
      for (const map of [[], [0x0f]])
        for (let op = 0; op < 256; op++)
          for (let modrm = 0; modrm < 256; modrm++) {
            buf.fill(0);
            buf.set([...prefix, ...map, op, modrm, ...tail].slice(0, 15));
            // IPs near the wrap-arounds: 2^16, 2^32, 2^64.
            compare(t, buf, mode, 0xffffffff, 0xffffff80 + modrm);
          }
    }
  assert.deepEqual(t.problems, []);
  assert.ok(
    t.compared > 500000 && t.rejected > 50000,
    `${t.compared} compared, ${t.rejected} rejected by iced`,
  );
});

test("random bytes in 16-, 32- and 64-bit code, biased to prefixes and opcodes with classes", () => {
  const t = newTally();
  const special = [
    0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x48, 0x0f, 0x01, 0xc7, 0xc6, 0xf8, 0xf4, 0xff, 0xe8, 0xc4, 0xc5, 0x62,
    0xd5,
  ];
  const byte = fc.oneof(fc.nat({ max: 255 }), fc.constantFrom(...special));
  fc.assert(
    fc.property(
      fc.array(byte, { minLength: 1, maxLength: 15 }),
      fc.constantFrom(Bits16, Bits32, Bits64),
      fc.nat({ max: 0xffffffff }),
      fc.nat({ max: 0xffffffff }),
      (bytes, mode, hi, lo) => compare(t, Uint8Array.from(bytes), mode, hi, lo),
    ),
    { numRuns: 50000 },
  );
  assert.deepEqual(t.problems, []);
  assert.ok(t.compared > 20000, `${t.compared} compared`);
});

test("real code: the libipt conformance images in every mode, at every byte offset", {
  skip: skipUnlessCorpus("ptt"),
}, () => {
  const t = newTally();
  const ptt = corpusPath("ptt")!;
  let images = 0;
  for (const name of readdirSync(ptt)) {
    let bin: Uint8Array;
    try {
      bin = readFileSync(join(ptt, name, `${name}.bin`));
    } catch {
      continue; // a test without an image
    }
    images++;
    for (let at = 0; at < bin.length; at++)
      for (const mode of [Bits16, Bits32, Bits64])
        compare(t, bin.subarray(at, at + 15), mode, 0, 0x1000 + at);
  }
  assert.deepEqual(t.problems, []);
  assert.ok(images > 100 && t.compared > 5000, `${images} images, ${t.compared} compared`);
});

const HELLO = ["real", "dynamorio-drpt2trace", "test_simple.tracedir-2aad718", "hello"];

test("real code: a static x86-64 executable's text, at every byte offset", {
  skip: skipUnlessCorpus(...HELLO),
}, () => {
  const bytes = new Uint8Array(readFileSync(corpusPath(...HELLO)!));
  const text = parseElf(bytes).sections.find((s) => s.name === ".text");
  assert.ok(text, ".text");
  const t = newTally();
  const end = Math.min(text.offset + text.size, text.offset + (1 << 18));
  for (let at = text.offset; at < end; at++)
    compare(t, bytes.subarray(at, at + 15), Bits64, 0, 0x401000 + at);
  assert.deepEqual(t.problems, []);
  assert.ok(t.compared > 200000, `${t.compared} compared`);
});

/**
 * Encoder byte layouts (known answers written by hand from the SDM packet tables),
 * field validation, and the PacketEncoder buffer.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { decodePacket } from "../../src/packet/decode.js";
import { encodedSize, encodePacket, PacketEncoder } from "../../src/packet/encode.js";
import { CfeType, EvdType, Flag, Ipc, Packet, PacketType } from "../../src/packet/types.js";
import {
  ALL_TYPES,
  anyPacket,
  bytesOf,
  contextFor,
  encode,
  type Fields,
  fieldsOf,
  hex,
  makePacket,
} from "./helpers.js";

type Case = [name: string, fields: Partial<Fields> & { type: PacketType }, bytes: string];

const PSB = "02 82 02 82 02 82 02 82 02 82 02 82 02 82 02 82";

const KNOWN: Case[] = [
  ["PAD", { type: PacketType.Pad }, "00"],
  ["PSB", { type: PacketType.Psb }, PSB],
  ["PSBEND", { type: PacketType.PsbEnd }, "02 23"],
  ["OVF", { type: PacketType.Ovf }, "02 f3"],
  ["TraceStop", { type: PacketType.Stop }, "02 83"],
  // TNT-8: stop bit above the branches, oldest branch highest, bit 0 clear.
  ["TNT-8 N T", { type: PacketType.Tnt8, a: 2, lo: 0b01 }, "0a"],
  ["TNT-8 T", { type: PacketType.Tnt8, a: 1, lo: 1 }, "06"],
  ["TNT-8 N", { type: PacketType.Tnt8, a: 1, lo: 0 }, "04"],
  ["TNT-8 6×T", { type: PacketType.Tnt8, a: 6, lo: 0x3f }, "fe"],
  ["TNT-8 6×N", { type: PacketType.Tnt8, a: 6, lo: 0 }, "80"],
  ["TNT-64 1×T", { type: PacketType.Tnt64, a: 1, lo: 1 }, "02 a3 03 00 00 00 00 00"],
  ["TNT-64 47×T", { type: PacketType.Tnt64, a: 47, lo: 0xffffffff, hi: 0x7fff }, "02 a3 ff ff ff ff ff ff"],
  ["TNT-64 33 bits", { type: PacketType.Tnt64, a: 33, lo: 0x12345678, hi: 1 }, "02 a3 78 56 34 12 03 00"],
  // IP packets: IPBytes in bits 7:5.
  ["TIP suppressed", { type: PacketType.Tip, a: Ipc.Suppressed }, "0d"],
  ["TIP.PGD suppressed", { type: PacketType.TipPgd, a: Ipc.Suppressed }, "01"],
  ["FUP update16", { type: PacketType.Fup, a: Ipc.Update16, lo: 0x1234 }, "3d 34 12"],
  ["TIP.PGE update32", { type: PacketType.TipPge, a: Ipc.Update32, lo: 0xdeadbeef }, "51 ef be ad de"],
  ["TIP sext48", { type: PacketType.Tip, a: Ipc.Sext48, lo: 0x12345678, hi: 0x7fff }, "6d 78 56 34 12 ff 7f"],
  [
    "FUP update48",
    { type: PacketType.Fup, a: Ipc.Update48, lo: 0x9abcdef0, hi: 0x5678 },
    "9d f0 de bc 9a 78 56",
  ],
  [
    "TIP full kernel IP",
    { type: PacketType.Tip, a: Ipc.Full, lo: 0x81000000, hi: 0xffffffff },
    "cd 00 00 00 81 ff ff ff ff",
  ],
  [
    "TIP.PGD full",
    { type: PacketType.TipPgd, a: Ipc.Full, lo: 0x89abcdef, hi: 0x01234567 },
    "c1 ef cd ab 89 67 45 23 01",
  ],
  // PIP: payload bits 47:1 hold CR3[51:5], bit 0 is NR.
  [
    "PIP NR",
    { type: PacketType.Pip, lo: 0xa9876540, hi: 0xfedcb, flags: Flag.Nr },
    "02 43 55 76 98 ba dc fe",
  ],
  ["PIP CR3 0x1000", { type: PacketType.Pip, lo: 0x1000 }, "02 43 00 01 00 00 00 00"],
  ["MODE.Exec 64-bit IF", { type: PacketType.ModeExec, flags: Flag.CsL | Flag.If }, "99 05"],
  ["MODE.Exec 32-bit", { type: PacketType.ModeExec, flags: Flag.CsD }, "99 02"],
  ["MODE.TSX begin", { type: PacketType.ModeTsx, flags: Flag.InTx }, "99 21"],
  ["MODE.TSX abort", { type: PacketType.ModeTsx, flags: Flag.Abort }, "99 22"],
  ["CBR", { type: PacketType.Cbr, a: 0x2c }, "02 03 2c 00"],
  ["TSC", { type: PacketType.Tsc, lo: 0x789abcde, hi: 0x123456 }, "19 de bc 9a 78 56 34 12"],
  ["TSC max", { type: PacketType.Tsc, lo: 0xffffffff, hi: 0xffffff }, "19 ff ff ff ff ff ff ff"],
  ["MTC", { type: PacketType.Mtc, a: 0xab }, "59 ab"],
  ["TMA", { type: PacketType.Tma, a: 0x1234, b: 0x1ff }, "02 73 34 12 00 ff 01"],
  // CYC: [7:3] value, [2] Exp, [1:0] 11; extension bytes [7:1] value, [0] Exp.
  ["CYC 0", { type: PacketType.Cyc, lo: 0 }, "03"],
  ["CYC 31", { type: PacketType.Cyc, lo: 31 }, "fb"],
  ["CYC 32", { type: PacketType.Cyc, lo: 32 }, "07 02"],
  ["CYC 0x57", { type: PacketType.Cyc, lo: 0x57 }, "bf 04"],
  ["CYC 4095", { type: PacketType.Cyc, lo: 4095 }, "ff fe"],
  ["CYC 4096", { type: PacketType.Cyc, lo: 4096 }, "07 01 02"],
  ["CYC 2^61-1", { type: PacketType.Cyc, lo: 0xffffffff, hi: 0x1fffffff }, "ff ff ff ff ff ff ff ff fe"],
  // VMCS: payload is the VMCS base bits 51:12.
  ["VMCS", { type: PacketType.Vmcs, lo: 0xa9876000, hi: 0xfedcb }, "02 c8 76 98 ba dc fe"],
  ["MNT", { type: PacketType.Mnt, lo: 0x89abcdef, hi: 0x01234567 }, "02 c3 88 ef cd ab 89 67 45 23 01"],
  // PTW: [7] IP, [6:5] PayloadBytes (00 = 4, 01 = 8), [4:0] 10010.
  ["PTW 4 bytes", { type: PacketType.Ptw, a: 4, lo: 0xdeadbeef }, "02 12 ef be ad de"],
  [
    "PTW 8 bytes IP",
    { type: PacketType.Ptw, a: 8, lo: 0x89abcdef, hi: 0x01234567, flags: Flag.Ip },
    "02 b2 ef cd ab 89 67 45 23 01",
  ],
  ["EXSTOP", { type: PacketType.Exstop }, "02 62"],
  ["EXSTOP IP", { type: PacketType.Exstop, flags: Flag.Ip }, "02 e2"],
  ["MWAIT", { type: PacketType.Mwait, a: 0x20, b: 1 }, "02 c2 20 00 00 00 01 00 00 00"],
  // PWRE: byte 2 bit 7 HW (SDM Vol. 3C Table 36-43, as perf reads it; libipt 2.0.5's
  // pt_pl_pwre_hw_mask is 0x8, bit 3), byte 3 [7:4] C-state, [3:0] sub C-state.
  ["PWRE C6.2 hw", { type: PacketType.Pwre, a: 6, b: 2, flags: Flag.Hw }, "02 22 80 62"],
  // PWRX: byte 2 [7:4] last, [3:0] deepest; byte 3 wake reasons (int 0, store 2, hw 3).
  ["PWRX", { type: PacketType.Pwrx, a: 6, b: 3, flags: Flag.WakeInt }, "02 a2 63 01 00 00 00"],
  [
    "PWRX store+hw",
    { type: PacketType.Pwrx, a: 1, b: 2, flags: Flag.WakeStore | Flag.WakeHw },
    "02 a2 12 0c 00 00 00",
  ],
  ["BBP sz=4", { type: PacketType.Bbp, a: 0x10, flags: Flag.Bip4 }, "02 63 90"],
  ["BBP sz=8", { type: PacketType.Bbp, a: 0x02 }, "02 63 02"],
  ["BIP 4 bytes", { type: PacketType.Bip, a: 3, b: 4, lo: 0xdeadbeef }, "1c ef be ad de"],
  [
    "BIP 8 bytes",
    { type: PacketType.Bip, a: 31, b: 8, lo: 0x89abcdef, hi: 0x01234567 },
    "fc ef cd ab 89 67 45 23 01",
  ],
  ["BEP", { type: PacketType.Bep }, "02 33"],
  ["BEP IP", { type: PacketType.Bep, flags: Flag.Ip }, "02 b3"],
  ["CFE INTR IP", { type: PacketType.Cfe, a: CfeType.Intr, b: 0x20, flags: Flag.Ip }, "02 13 81 20"],
  ["CFE SYSCALL", { type: PacketType.Cfe, a: CfeType.Syscall }, "02 13 0f 00"],
  [
    "EVD VMX reason",
    { type: PacketType.Evd, a: EvdType.VmxReason, lo: 0x30 },
    "02 53 02 30 00 00 00 00 00 00 00",
  ],
  ["TRIG", { type: PacketType.Trig, a: 0x05 }, "d9 00 05"],
  [
    "TRIG IP MULT ICNT",
    { type: PacketType.Trig, a: 0x05, b: 0x1234, flags: Flag.Ip | Flag.Mult | Flag.Icntv },
    "d9 e0 05 34 12",
  ],
];

describe("known byte layouts", () => {
  for (const [name, fields, expected] of KNOWN) {
    test(name, () => {
      const bytes = encode(fields);
      assert.equal(hex(bytes), hex(bytesOf(expected)));
    });
  }
});

describe("known byte layouts decode to the same fields", () => {
  for (const [name, fields, expected] of KNOWN) {
    test(name, () => {
      const bytes = bytesOf(expected);
      const want = fieldsOf(makePacket(fields));
      const out = new Packet();
      assert.equal(decodePacket(bytes, 0, bytes.length, out, contextFor(want), 0), bytes.length);
      assert.deepEqual(fieldsOf(out), want);
    });
  }
});

const BAD: [string, Partial<Fields> & { type: PacketType }][] = [
  ["unknown type", { type: 99 as PacketType }],
  ["Bad", { type: PacketType.Bad }],
  ["TNT-8 with 0 bits", { type: PacketType.Tnt8, a: 0 }],
  ["TNT-8 with 7 bits", { type: PacketType.Tnt8, a: 7 }],
  ["TNT-8 bits above the count", { type: PacketType.Tnt8, a: 2, lo: 4 }],
  ["TNT-64 with 0 bits", { type: PacketType.Tnt64, a: 0 }],
  ["TNT-64 with 48 bits", { type: PacketType.Tnt64, a: 48 }],
  ["TNT-64 bits above the count", { type: PacketType.Tnt64, a: 40, hi: 0x100 }],
  ["reserved IPBytes 5", { type: PacketType.Tip, a: 5 }],
  ["reserved IPBytes 7", { type: PacketType.Fup, a: 7 }],
  ["IPBytes 8", { type: PacketType.Fup, a: 8 }],
  ["suppressed IP with a payload", { type: PacketType.TipPgd, a: Ipc.Suppressed, lo: 1 }],
  ["update16 payload too wide", { type: PacketType.Tip, a: Ipc.Update16, lo: 0x10000 }],
  ["update32 payload too wide", { type: PacketType.Tip, a: Ipc.Update32, hi: 1 }],
  ["sext48 payload too wide", { type: PacketType.Tip, a: Ipc.Sext48, hi: 0x10000 }],
  ["PIP CR3 bits 4:0", { type: PacketType.Pip, lo: 0x10 }],
  ["PIP CR3 above bit 51", { type: PacketType.Pip, hi: 0x100000 }],
  ["PIP foreign flag", { type: PacketType.Pip, flags: Flag.Ip }],
  ["MODE.Exec TSX flag", { type: PacketType.ModeExec, flags: Flag.InTx }],
  ["CBR 256", { type: PacketType.Cbr, a: 256 }],
  ["TSC above 56 bits", { type: PacketType.Tsc, hi: 0x1000000 }],
  ["MTC 256", { type: PacketType.Mtc, a: 256 }],
  ["TMA CTC 0x10000", { type: PacketType.Tma, a: 0x10000 }],
  ["TMA FC 0x200", { type: PacketType.Tma, b: 0x200 }],
  ["VMCS bits 11:0", { type: PacketType.Vmcs, lo: 0x800 }],
  ["VMCS above bit 51", { type: PacketType.Vmcs, hi: 0x100000 }],
  ["PTW 6 bytes", { type: PacketType.Ptw, a: 6 }],
  ["PTW 0 bytes", { type: PacketType.Ptw, a: 0 }],
  ["PTW 4 bytes with a high half", { type: PacketType.Ptw, a: 4, hi: 1 }],
  ["PWRE C-state 16", { type: PacketType.Pwre, a: 16 }],
  ["PWRX deepest 16", { type: PacketType.Pwrx, b: 16 }],
  ["BBP type 32", { type: PacketType.Bbp, a: 32 }],
  ["BIP 5 bytes", { type: PacketType.Bip, b: 5 }],
  ["BIP id 32", { type: PacketType.Bip, a: 32, b: 8 }],
  ["BIP 4 bytes with a high half", { type: PacketType.Bip, b: 4, hi: 1 }],
  ["CFE type 32", { type: PacketType.Cfe, a: 32 }],
  ["CFE vector 256", { type: PacketType.Cfe, b: 256 }],
  ["EVD type 64", { type: PacketType.Evd, a: 64 }],
  ["TRIG icnt without ICNTV", { type: PacketType.Trig, b: 1 }],
  ["TRIG icnt 0x10000", { type: PacketType.Trig, b: 0x10000, flags: Flag.Icntv }],
  ["TRIG TRBV 256", { type: PacketType.Trig, a: 256 }],
  ["PAD with a payload", { type: PacketType.Pad, lo: 1 }],
  ["PSB with a field", { type: PacketType.Psb, a: 1 }],
  ["negative field", { type: PacketType.Mtc, a: -1 }],
  ["fractional field", { type: PacketType.Cbr, a: 1.5 }],
  ["NaN field", { type: PacketType.Cyc, lo: Number.NaN }],
  ["payload half of 2^32", { type: PacketType.Mnt, lo: 2 ** 32 }],
  ["negative payload half", { type: PacketType.Mnt, hi: -1 }],
  ["fractional flags", { type: PacketType.Exstop, flags: 0.5 }],
];

describe("fields that cannot be encoded", () => {
  for (const [name, fields] of BAD) {
    test(name, () => {
      const pkt = makePacket(fields);
      assert.equal(encodedSize(pkt), -ErrorCode.BadPacket);
      const buf = new Uint8Array(32).fill(0xee);
      assert.equal(encodePacket(buf, 0, pkt), -ErrorCode.BadPacket);
      assert.ok(
        buf.every((x) => x === 0xee),
        "nothing written",
      );
    });
  }
});

test("-Eos when the packet does not fit, nothing written", () => {
  const pkt = makePacket({ type: PacketType.Tsc, lo: 1 });
  for (const [len, pos] of [
    [7, 0],
    [8, 1],
    [0, 0],
    [16, 9],
    [8, 8],
  ] as const) {
    const buf = new Uint8Array(len).fill(0xee);
    assert.equal(encodePacket(buf, pos, pkt), -ErrorCode.Eos, `len ${len} pos ${pos}`);
    assert.ok(buf.every((x) => x === 0xee));
  }
  assert.equal(encodePacket(new Uint8Array(8), 0, pkt), 8);
  assert.equal(encodePacket(new Uint8Array(8), -1, pkt), -ErrorCode.Eos);
});

/** Field values around every boundary, valid or not; mostly 0 so that whole packets are often valid. */
const junkField = fc.oneof(
  { weight: 10, arbitrary: fc.constant(0) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 31, 32, 47, 48, 63, 64, 255, 256, 0x1ff),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(0x200, 0xffff, 0x10000, 0xfffff, 0x100000, 0xffffff, 0x1000000, 0xffffffff),
  },
  { weight: 1, arbitrary: fc.constantFrom(2 ** 32, -1, 0.5, Number.NaN) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffffffff }) },
);
const junkPacket = fc
  .record({
    type: fc.integer({ min: 0, max: 34 }) as fc.Arbitrary<PacketType>,
    lo: junkField,
    hi: junkField,
    a: junkField,
    b: junkField,
    flags: fc.oneof(
      { weight: 6, arbitrary: fc.constant(0) },
      { weight: 3, arbitrary: fc.constantFrom(...Object.values(Flag)) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x3fff }) },
    ),
  })
  .map((f) => ({ ...f }));

/** A valid packet with one field replaced by a boundary value: probes strictness next to valid space. */
const nearValidPacket = fc
  .tuple(
    anyPacket,
    fc.constantFrom("lo", "hi", "a", "b", "flags"),
    junkField,
    fc.constantFrom(...Object.values(Flag)),
  )
  .map(([f, key, v, flag]) => ({ ...f, [key]: key === "flags" ? f.flags ^ flag : v }));

test("whatever the fields, a successful encode decodes to exactly those fields", () => {
  const encodedTypes = new Set<number>();
  fc.assert(
    fc.property(fc.oneof(junkPacket, nearValidPacket), (f) => {
      const pkt = makePacket(f);
      const size = encodedSize(pkt);
      const buf = new Uint8Array(24);
      assert.equal(encodePacket(buf, 0, pkt), size);
      if (size < 0) {
        assert.equal(size, -ErrorCode.BadPacket);
        return;
      }
      encodedTypes.add(f.type);
      const out = new Packet();
      assert.equal(decodePacket(buf, 0, buf.length, out, contextFor(f), 0), size);
      assert.deepEqual(fieldsOf(out), f);
    }),
    { numRuns: 20000 },
  );
  // The generator must reach the encodable space of every type.
  assert.equal(encodedTypes.size, ALL_TYPES.length, `encoded only types ${[...encodedTypes]}`);
});

describe("PacketEncoder", () => {
  test("emits the same bytes as encodePacket and grows from a tiny buffer", () => {
    const enc = new PacketEncoder(1);
    const expected: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const pkt = makePacket({ type: PacketType.Cyc, lo: i * 7919 });
      const bytes = encode(fieldsOf(pkt));
      expected.push(...bytes);
      assert.equal(enc.emit(pkt), bytes.length);
    }
    assert.equal(enc.length, expected.length);
    assert.deepEqual(Array.from(enc.bytes()), expected);
  });

  test("growth doubles: few reallocations, capacity at most twice the content", () => {
    const enc = new PacketEncoder(16);
    const pad = makePacket({ type: PacketType.Pad });
    const buffers = new Set<ArrayBufferLike>();
    const n = 1 << 20;
    for (let i = 0; i < n; i++) {
      enc.emit(pad);
      if ((i & 1023) === 0) buffers.add(enc.bytes().buffer);
    }
    buffers.add(enc.bytes().buffer);
    assert.equal(enc.length, n);
    assert.ok(buffers.size <= 18, `${buffers.size} buffers`);
    assert.ok(enc.bytes().buffer.byteLength <= 2 * n);
  });

  test("an invalid packet writes nothing and returns -BadPacket", () => {
    const enc = new PacketEncoder();
    enc.emit(makePacket({ type: PacketType.Pad }));
    assert.equal(enc.emit(makePacket({ type: PacketType.Tnt8, a: 9 })), -ErrorCode.BadPacket);
    assert.equal(enc.emitIp(PacketType.Tsc, 0, 0), -ErrorCode.BadPacket);
    assert.equal(enc.emitSuppressed(PacketType.Mtc), -ErrorCode.BadPacket);
    assert.equal(enc.length, 1);
  });

  test("bytes() is a view of exactly the emitted bytes; reset() starts over", () => {
    const enc = new PacketEncoder();
    enc.emit(makePacket({ type: PacketType.PsbEnd }));
    assert.equal(hex(enc.bytes()), "02 23");
    enc.emitIp(PacketType.Tip, 0, 0x1000);
    enc.reset();
    assert.equal(enc.length, 0);
    assert.equal(enc.last.have, false);
    enc.emit(makePacket({ type: PacketType.Ovf }));
    assert.equal(hex(enc.bytes()), "02 f3");
  });
});

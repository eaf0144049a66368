/**
 * Differential test of instruction lengths against libipt (Debian's libipt-dev, through
 * tools/libipt/harness.c's --ild mode): for every one-byte opcode and every 0F xx,
 * 0F 38 xx and 0F 3A xx opcode, under legacy prefixes, REX, VEX (C4, C5) and EVEX,
 * with a range of ModRM and SIB bytes and 0xFF padding, in 16-, 32- and 64-bit code,
 * decodeInsn's length must be libipt's, and it must fail exactly where libipt does
 * (also for bytes cut short). The class must be libipt's too, but for the far
 * transfers only ptkit tells apart.
 *
 * Skips (with what to install) when there is no C compiler or libipt-dev.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { decodeInsn } from "../../src/isa/decode.js";
import { jmpabsLength } from "../../src/isa/jmpabs.js";
import { ExecMode, InsnClass, InsnInfo } from "../../src/isa/types.js";
import { buildLibiptHarness } from "../../tools/libipt/harness.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-ild-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const build = buildLibiptHarness(dir);
const skip = "skip" in build ? build.skip : false;

const MODES = [ExecMode.Bits16, ExecMode.Bits32, ExecMode.Bits64];
const PAD = 0xff;

/** Legacy prefixes and REX (INC/DEC outside 64-bit mode), alone and in the orders that matter. */
const PREFIXES = [
  [],
  [0x66],
  [0x67],
  [0xf2],
  [0xf3],
  [0xf0],
  [0x2e],
  [0x48],
  [0x44],
  [0x66, 0x48],
  [0x48, 0x66], // a legacy prefix after REX: the REX no longer counts
  [0x66, 0x67],
  [0xf3, 0x66],
];
/** After the opcode: ModRM (and SIB) bytes for no, 8-, 16- and 32-bit displacements, reg 0/2/7. */
const MODRM = [
  [0x00],
  [0x05],
  [0x06],
  [0x04, 0x25],
  [0x04, 0x00],
  [0x45],
  [0x85],
  [0xc0],
  [0xd0],
  [0xf8],
  [0x38],
];
const MODRM_SHORT = [[0x00], [0x05], [0x04, 0x25], [0x85], [0xc0], [0xf8]];
/** VEX and EVEX prefixes: every map value libipt looks at, W=0/1, and LES/LDS/BOUND outside 64-bit mode. */
const VEX = [
  ...[0xf8, 0x78, 0x00, 0xc0].map((p1) => [0xc5, p1]),
  ...[0xe1, 0xe2, 0xe3, 0xe0, 0xe4, 0xe5, 0xff, 0x61].flatMap((p1) =>
    [0x78, 0xf8].map((p2) => [0xc4, p1, p2]),
  ),
  ...[0xf1, 0xf2, 0xf3, 0xf0, 0x71].flatMap((p1) => [0x7c, 0xfc].map((p2) => [0x62, p1, p2, 0x48])),
];
const OPCODES = [...Array(256).keys()].flatMap((op) => [
  [op],
  [0x0f, op],
  [0x0f, 0x38, op],
  [0x0f, 0x3a, op],
]);

interface Case {
  mode: ExecMode;
  bytes: Uint8Array;
}

/** `head` padded with 0xFF to 15 bytes. */
function padded(mode: ExecMode, head: number[]): Case {
  const bytes = new Uint8Array(15).fill(PAD);
  bytes.set(head.slice(0, 15));
  return { mode, bytes };
}

function cases(): Case[] {
  const all: Case[] = [];
  for (const mode of MODES) {
    all.push(padded(mode, []));
    for (const prefix of PREFIXES)
      for (const op of OPCODES)
        for (const modrm of MODRM) all.push(padded(mode, [...prefix, ...op, ...modrm]));
    for (const vex of VEX)
      for (let op = 0; op < 256; op++)
        for (const modrm of MODRM_SHORT) all.push(padded(mode, [...vex, op, ...modrm]));
    // Cut short: every length from 1 byte on, with zeros after the ModRM.
    for (const op of OPCODES)
      for (const modrm of [[0x05], [0x85], [0x04, 0x25]]) {
        const full = [...op, ...modrm, 0, 0, 0, 0, 0, 0, 0, 0];
        for (let n = 1; n <= 12; n++) all.push({ mode, bytes: Uint8Array.from(full.slice(0, n)) });
      }
  }
  return all;
}

/** libipt's class (the harness's names) of each ptkit class it has one for; the rest are "other". */
const LIBIPT_CLASS: Partial<Record<InsnClass, string>> = {
  [InsnClass.CondBranch]: "cond_jump",
  [InsnClass.Jump]: "jump",
  [InsnClass.JumpIndirect]: "jump",
  [InsnClass.Call]: "call",
  [InsnClass.CallIndirect]: "call",
  [InsnClass.Return]: "return",
  [InsnClass.FarCall]: "far_call",
  [InsnClass.Interrupt]: "far_call",
  [InsnClass.Syscall]: "far_call",
  [InsnClass.VmExit]: "far_call",
  [InsnClass.FarJump]: "far_jump",
  [InsnClass.FarReturn]: "far_return",
  [InsnClass.Iret]: "far_return",
  [InsnClass.Sysret]: "far_return",
  [InsnClass.VmEntry]: "far_return",
  [InsnClass.PtWrite]: "ptwrite",
};

/**
 * Far transfers ptkit knows and libipt 2.0 does not (AMD VMRUN/VMMCALL, TDCALL, UD0-2,
 * ...; libipt: other) or calls otherwise (UIRET: libipt far_return, ptkit FarOther).
 */
const PTKIT_ONLY = new Set<InsnClass>([
  InsnClass.VmEntry,
  InsnClass.VmExit,
  InsnClass.FarOther,
  InsnClass.Ud,
]);

/** JMPABS is APX (newer than libipt 2.0, whose length for it is AAD's): ptkit knows it. */
function isJmpabs(c: Case): boolean {
  return c.mode === ExecMode.Bits64 && jmpabsLength(c.bytes, 0, c.bytes.length) > 0;
}

test("instruction lengths, failures and classes are libipt's, for every opcode under prefixes, VEX and EVEX", {
  skip,
}, (t) => {
  if ("error" in build) assert.fail(build.error);
  if (!("bin" in build)) return;
  const all = cases().filter((c) => !isJmpabs(c));
  const pack = new Uint8Array(all.reduce((n, c) => n + 2 + c.bytes.length, 0));
  let at = 0;
  for (const c of all) {
    pack[at] = c.mode;
    pack[at + 1] = c.bytes.length;
    pack.set(c.bytes, at + 2);
    at += 2 + c.bytes.length;
  }
  const file = join(dir, "cases.pack");
  writeFileSync(file, pack);
  const r = spawnSync(build.bin, ["--ild", file], { encoding: "utf8", maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, `${build.bin}: ${r.stderr}`);
  const lines = r.stdout.split("\n");
  assert.equal(lines.length - 1, all.length, "one line per case");

  const out = new InsnInfo();
  const problems: string[] = [];
  let decoded = 0;
  for (let i = 0; i < all.length; i++) {
    const { mode, bytes } = all[i]!;
    const line = lines[i]!;
    const want = line.startsWith("E ") ? -1 : Number.parseInt(line, 10);
    assert.ok(want === -1 ? line === "E bad_insn" : want >= 1 && want <= bytes.length, `libipt: ${line}`);
    const got = decodeInsn(bytes, 0, 0, 0x1000, mode, out);
    if (want > 0) decoded++;
    let bad = (got < 0 ? -1 : got) !== want;
    if (!bad && got > 0) {
      // The class too, as far as libipt has one.
      const cls = line.slice(line.indexOf(" ") + 1);
      const ours = LIBIPT_CLASS[out.iclass] ?? "other";
      bad = ours !== cls && !(PTKIT_ONLY.has(out.iclass) && (cls === "other" || cls === "far_return"));
    }
    if (bad && problems.length < 20) {
      const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
      problems.push(`mode ${mode} [${hex}]: libipt ${line}, ptkit ${got} class ${out.iclass}`);
    }
  }
  t.diagnostic(`${all.length} cases, ${decoded} decoded by libipt`);
  assert.deepEqual(problems, []);
  // The patterns reach both outcomes a lot.
  assert.ok(decoded > all.length / 2 && all.length - decoded > 10000, `${decoded} of ${all.length} decoded`);
});

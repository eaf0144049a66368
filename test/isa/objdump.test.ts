/**
 * Cross-check against GNU objdump on real binaries of this machine: every instruction
 * of their .text sections must have objdump's length, the class objdump's mnemonic
 * implies, and objdump's branch target (UD0/UD1 have libipt 2.0's length, which ptkit
 * takes). The .text bytes are also disassembled as
 * 32-bit and 16-bit code (`objdump -b binary -m i386 / i8086`), which covers the
 * legacy far transfers and 16/32-bit target wrap-around on a lot of odd code.
 *
 * Skips with a message when objdump or the binaries are missing.
 */
// test:quick skips this file: cross-checks with GNU objdump.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { decodeInsn } from "../../src/isa/decode.js";
import { ExecMode, INSN_CLASS_NAMES, InsnClass, InsnFlag, InsnInfo } from "../../src/isa/types.js";

const BINARIES = ["/bin/ls", "/bin/bash", "/lib/x86_64-linux-gnu/libc.so.6"];

function haveObjdump(): boolean {
  try {
    execFileSync("objdump", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const OBJDUMP = haveObjdump();
const NO_OBJDUMP = "GNU objdump is not installed (apt-get install binutils)";

interface Section {
  addr: number;
  bytes: Uint8Array;
}

/** The .text section of an ELF64 little-endian file (just enough ELF for that). */
function elfText(path: string): Section {
  const file = readFileSync(path);
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  assert.equal(dv.getUint32(0, false), 0x7f454c46, `${path} is ELF`);
  assert.equal(file[4], 2, `${path} is ELF64`);
  const shoff = Number(dv.getBigUint64(0x28, true));
  const shentsize = dv.getUint16(0x3a, true);
  const shnum = dv.getUint16(0x3c, true);
  const shstrndx = dv.getUint16(0x3e, true);
  const strtab = Number(dv.getBigUint64(shoff + shstrndx * shentsize + 24, true));
  for (let i = 0; i < shnum; i++) {
    const h = shoff + i * shentsize;
    let p = strtab + dv.getUint32(h, true);
    let name = "";
    while (file[p] !== 0) name += String.fromCharCode(file[p++]!);
    if (name !== ".text") continue;
    const addr = Number(dv.getBigUint64(h + 16, true));
    const offset = Number(dv.getBigUint64(h + 24, true));
    const size = Number(dv.getBigUint64(h + 32, true));
    return { addr, bytes: file.subarray(offset, offset + size) };
  }
  throw new Error(`${path} has no .text`);
}

interface Line {
  addr: number;
  text: string;
}

function objdump(args: string[]): Line[] {
  const out = execFileSync("objdump", ["-z", "--no-show-raw-insn", "-w", ...args], {
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  const lines: Line[] = [];
  for (const m of out.matchAll(/^\s*([0-9a-f]+):\t(.*)$/gm)) {
    lines.push({ addr: Number.parseInt(m[1]!, 16), text: m[2]!.trim() });
  }
  return lines;
}

const PREFIX =
  /^(bnd|notrack|lock|rep|repz|repe|repnz|repne|data16|data32|addr16|addr32|cs|ds|es|ss|fs|gs|xacquire|xrelease|rex(\.[WRXB]+)?|\{[a-z0-9]+\})$/;
const JCC =
  /^(jo|jno|jb|jc|jnae|jae|jnb|jnc|je|jz|jne|jnz|jbe|jna|ja|jnbe|js|jns|jp|jpe|jnp|jpo|jl|jnge|jge|jnl|jle|jng|jg|jnle|jcxz|jecxz|jrcxz|loop|loopl|loopw|loope|loopel|loopew|loopz|loopne|loopnel|loopnew|loopnz)$/;

/** The mnemonic (prefixes dropped) and the operand text of an objdump line. */
function split(text: string): [string, string] {
  const tokens = text.replace(/\s+#.*$/, "").split(/\s+/);
  let i = 0;
  while (i < tokens.length - 1 && PREFIX.test(tokens[i]!)) i++;
  // Drop branch hints: "jne,pn".
  return [tokens[i]!.replace(/,p[nt]$/, ""), tokens.slice(i + 1).join(" ")];
}

/** The class objdump's text implies, and the direct target it prints (if any). */
function expected(text: string): [InsnClass, number | undefined] {
  const [mn, ops] = split(text);
  const direct = () => {
    const m = /^(?:0x)?([0-9a-f]+)\b/.exec(ops);
    return m ? Number.parseInt(m[1]!, 16) : undefined;
  };
  if (JCC.test(mn)) return [InsnClass.CondBranch, direct()];
  if (/^jmp[wlq]?$/.test(mn))
    return ops.startsWith("*") ? [InsnClass.JumpIndirect, undefined] : [InsnClass.Jump, direct()];
  if (/^call[wlq]?$/.test(mn))
    return ops.startsWith("*") ? [InsnClass.CallIndirect, undefined] : [InsnClass.Call, direct()];
  if (/^ljmp[wlq]?$/.test(mn)) return [InsnClass.FarJump, undefined];
  if (/^lcall[wlq]?$/.test(mn)) return [InsnClass.FarCall, undefined];
  if (/^ret[wlq]?$/.test(mn)) return [InsnClass.Return, undefined];
  if (/^lret[wlq]?$/.test(mn)) return [InsnClass.FarReturn, undefined];
  if (/^iret[wlqd]?$/.test(mn)) return [InsnClass.Iret, undefined];
  if (/^(int|int3|int1|icebp|into)$/.test(mn)) return [InsnClass.Interrupt, undefined];
  if (/^(syscall|sysenter)$/.test(mn)) return [InsnClass.Syscall, undefined];
  if (/^(sysret|sysexit)[lq]?$/.test(mn)) return [InsnClass.Sysret, undefined];
  if (/^(vmlaunch|vmresume|vmrun)$/.test(mn)) return [InsnClass.VmEntry, undefined];
  if (/^(vmcall|vmmcall)$/.test(mn)) return [InsnClass.VmExit, undefined];
  if (/^(rsm|uiret|eretu|erets)$/.test(mn)) return [InsnClass.FarOther, undefined];
  if (/^ud[012][wlq]?$/.test(mn)) return [InsnClass.Ud, undefined];
  if (/^ptwrite[lq]?$/.test(mn)) return [InsnClass.PtWrite, undefined];
  if (/^mov[lq]?$/.test(mn) && /,%cr3$/.test(ops)) return [InsnClass.MovCr3, undefined];
  if (mn === "xbegin") return [InsnClass.Xbegin, direct()];
  if (mn === "xend") return [InsnClass.Xend, undefined];
  if (mn === "xabort") return [InsnClass.Xabort, undefined];
  if (mn === "mwait") return [InsnClass.Mwait, undefined];
  if (mn === "hlt") return [InsnClass.Hlt, undefined];
  if (mn === "vmptrld") return [InsnClass.Vmptrld, undefined];
  return [InsnClass.Other, undefined];
}

/**
 * UD0 (0F FF) and UD1 (0F B9) have a ModRM byte, but not to libipt 2.0, whose length
 * ptkit takes (ptxed's): prefixes and the two opcode bytes. Either raises #UD.
 */
function libiptUdLength(bytes: Uint8Array): number | undefined {
  let i = 0;
  while (
    i < bytes.length &&
    [0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3].includes(bytes[i]!)
  )
    i++;
  if (bytes[i] === 0x0f && (bytes[i + 1] === 0xff || bytes[i + 1] === 0xb9)) return i + 2;
  return undefined;
}

interface Report {
  checked: number;
  objdumpBad: number;
  problems: string[];
  classes: number[];
}

function crossCheck(sec: Section, lines: Line[], mode: ExecMode, ipHi: number, base: number): Report {
  const out = new InsnInfo();
  const report: Report = { checked: 0, objdumpBad: 0, problems: [], classes: new Array(32).fill(0) };
  const problem = (line: Line, what: string) => {
    if (report.problems.length < 20) {
      const raw = Array.from(sec.bytes.subarray(line.addr - sec.addr, line.addr - sec.addr + 15), (b) =>
        b.toString(16).padStart(2, "0"),
      ).join(" ");
      report.problems.push(`${line.addr.toString(16)}: ${line.text} [${raw}]: ${what}`);
    } else report.problems.length++;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const next = i + 1 < lines.length ? lines[i + 1]!.addr : sec.addr + sec.bytes.length;
    const offset = line.addr - sec.addr;
    const ipLo = (base + line.addr) % 2 ** 32;
    const hi = mode === ExecMode.Bits64 ? (ipHi + Math.floor((base + line.addr) / 2 ** 32)) >>> 0 : 0;
    const status = decodeInsn(sec.bytes, offset, hi, ipLo, mode, out);
    if (line.text.includes("(bad)") || line.text.startsWith(".byte")) {
      // Undefined to objdump, the bytes still have libipt's length (the libipt
      // differential test, ild-libipt.test.ts, checks those).
      report.objdumpBad++;
      continue;
    }
    if (status < 0) {
      problem(line, `we: ${status}`);
      continue;
    }
    report.checked++;
    report.classes[out.iclass]!++;
    const ud = libiptUdLength(sec.bytes.subarray(offset, offset + 15));
    if (ud !== undefined) {
      if (status !== ud || out.iclass !== InsnClass.Ud) problem(line, `UD0/UD1: length ${status}, not ${ud}`);
      continue;
    }
    if (status !== next - line.addr) problem(line, `length ${status}, objdump ${next - line.addr}`);
    const [iclass, target] = expected(line.text);
    if (out.iclass !== iclass)
      problem(line, `class ${INSN_CLASS_NAMES[out.iclass]}, objdump ${INSN_CLASS_NAMES[iclass]}`);
    if (target !== undefined) {
      if (!(out.flags & InsnFlag.Target)) problem(line, "no target");
      else {
        // Targets wrap at the operand size: a data16/data32 prefix switches it.
        const wide =
          mode === ExecMode.Bits64 || (mode === ExecMode.Bits32) !== /\bdata(16|32)\b/.test(line.text);
        const want = (base + target) % (wide ? 2 ** 32 : 2 ** 16);
        const carry = mode === ExecMode.Bits64 ? Math.floor((base + target) / 2 ** 32) : 0;
        const wantHi = mode === ExecMode.Bits64 ? (ipHi + carry) >>> 0 : 0;
        if (out.targetLo !== want || out.targetHi !== wantHi) {
          problem(line, `target ${out.target?.toString(16)}, objdump ${target.toString(16)}`);
        }
      }
    } else if (out.flags & InsnFlag.Target && iclass !== InsnClass.Other) {
      problem(line, "unexpected target");
    }
  }
  return report;
}

function summary(r: Report): string {
  const classes = r.classes
    .map((n, c) => (n > 0 ? `${INSN_CLASS_NAMES[c]} ${n}` : ""))
    .filter((s) => s)
    .join(", ");
  return `${r.checked} instructions (${classes}); objdump (bad): ${r.objdumpBad}`;
}

describe("GNU objdump cross-check", () => {
  for (const path of BINARIES) {
    const skip = !OBJDUMP ? NO_OBJDUMP : existsSync(path) ? false : `${path} does not exist here`;
    test(`${path} .text as 64-bit code: lengths, classes, targets`, { skip }, (t) => {
      const sec = elfText(path);
      const lines = objdump(["-d", "-j", ".text", path]);
      assert.ok(lines.length > 1000, "objdump listed the .text section");
      assert.equal(lines[0]!.addr, sec.addr);
      const r = crossCheck(sec, lines, ExecMode.Bits64, 0, 0);
      t.diagnostic(summary(r));
      assert.deepEqual(r.problems, []);
      assert.equal(r.objdumpBad, 0);
      // The same code mapped high (kernel-like), where targets cross into the high half.
      const high = crossCheck(sec, lines, ExecMode.Bits64, 0xffffffff, 0xffff0000);
      assert.deepEqual(high.problems, []);
    });
  }

  const path = BINARIES[0]!;
  for (const [mode, arch] of [
    [ExecMode.Bits32, "i386"],
    [ExecMode.Bits16, "i8086"],
  ] as [ExecMode, string][]) {
    test(`${path} .text bytes as ${arch} code`, {
      skip: !OBJDUMP ? NO_OBJDUMP : existsSync(path) ? false : `${path} is missing`,
    }, (t) => {
      const text = elfText(path);
      const dir = mkdtempSync(join(tmpdir(), "ptkit-isa-"));
      try {
        const file = join(dir, "text.bin");
        writeFileSync(file, text.bytes);
        const lines = objdump(["-D", "-b", "binary", "-m", arch, file]);
        const sec = { addr: 0, bytes: text.bytes };
        const r = crossCheck(sec, lines, mode, 0, 0);
        t.diagnostic(summary(r));
        assert.deepEqual(r.problems, []);
        assert.ok(r.checked > 10000);
        // At a base where 16/32-bit targets wrap.
        const base = mode === ExecMode.Bits16 ? 0xc000 : 0xffff0000;
        const wrapped = crossCheck(sec, lines, mode, 0, base);
        assert.deepEqual(wrapped.problems, []);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

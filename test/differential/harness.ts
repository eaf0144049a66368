/**
 * The two sides of the libipt differential test:
 *
 * - libipt: the shared C harness `tools/libipt/harness.c` in dump mode, compiled at test
 *   time (by tools/libipt/harness.ts) into a temporary directory and run on trace files;
 *   its output format is specified in the C file's header comment.
 * - ptkit: {@link ptkitLines} decodes a buffer with {@link PacketDecoder} under the same
 *   sync/resync policy and prints the same lines from the decoded {@link Packet} fields.
 *
 * Plus comparison and failure reporting (first differing line, hex excerpt, the input
 * saved to a temporary file).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCode, Flag, PACKET_NAMES, Packet, PacketDecoder, PacketType } from "../../src/packet/index.js";
import { buildLibiptHarness } from "../../tools/libipt/harness.js";

/** Sync policy: synchronise forward to the first PSB, or trust a packet at offset 0. */
export type Mode = "sync" | "at0";

export type Harness =
  | { kind: "ready"; bin: string; dir: string; command: string }
  | { kind: "skip"; reason: string }
  | { kind: "broken"; reason: string };

/**
 * Compile the C harness into a fresh temporary directory. Missing tools are a skip;
 * a harness that does not compile for any other reason is an error of this test.
 */
export function buildHarness(): Harness {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-libipt-diff-"));
  const b = buildLibiptHarness(dir);
  if ("bin" in b) return { kind: "ready", bin: b.bin, dir, command: b.command };
  rmSync(dir, { recursive: true, force: true });
  return "skip" in b ? { kind: "skip", reason: b.skip } : { kind: "broken", reason: b.error };
}

/**
 * Run the harness once with `args` (see the C file's usage) and return each trace's
 * lines, without its F line. `modes` is the policy expected for each trace, in order.
 */
export function runHarness(bin: string, args: readonly string[], modes: readonly Mode[]): string[][] {
  const r = spawnSync(bin, args, { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error || r.status !== 0) {
    throw new Error(`${bin} failed (status ${r.status}): ${(r.stderr || String(r.error)).trim()}`);
  }
  const traces: string[][] = [];
  for (const line of r.stdout.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("F ")) {
      const [, index, mode] = line.split(" ");
      if (Number(index) !== traces.length || mode !== modes[traces.length]) {
        throw new Error(`unexpected harness line ${JSON.stringify(line)} for trace #${traces.length}`);
      }
      traces.push([]);
      continue;
    }
    const current = traces.at(-1);
    if (!current) throw new Error(`harness output before the first F line: ${line}`);
    current.push(line);
  }
  if (traces.length !== modes.length)
    throw new Error(`harness listed ${traces.length} of ${modes.length} traces`);
  return traces;
}

/** Write `bufs` as a harness pack: per buffer a 4-byte little-endian length, then the bytes. */
export function writePack(path: string, bufs: readonly Uint8Array[]): void {
  const out = new Uint8Array(bufs.reduce((n, b) => n + 4 + b.length, 0));
  const view = new DataView(out.buffer);
  let pos = 0;
  for (const b of bufs) {
    view.setUint32(pos, b.length, true);
    out.set(b, pos + 4);
    pos += 4 + b.length;
  }
  writeFileSync(path, out);
}

/** libipt's short error names (the C harness's error_name), indexed by code. */
const ERROR_NAMES: readonly string[] = [
  "ok",
  "internal",
  "invalid",
  "nosync",
  "bad_opc",
  "bad_packet",
  "bad_context",
  "eos",
  "bad_query",
  "nomem",
  "bad_config",
  "noip",
  "ip_suppressed",
  "nomap",
  "bad_insn",
  "no_time",
  "no_cbr",
  "bad_image",
  "bad_lock",
  "not_supported",
  "retstack_empty",
  "bad_retcomp",
  "bad_status_update",
  "no_enable",
  "event_ignored",
  "overflow",
  "bad_file",
  "bad_cpu",
];

const code = (status: number): string => `${-status} ${ERROR_NAMES[-status] ?? "unknown_error"}`;
const hex8 = (n: number): string => n.toString(16).padStart(8, "0");
const x = (n: number): string => `0x${(n >>> 0).toString(16)}`;
const x64 = (p: Packet): string =>
  p.hi === 0 ? x(p.lo) : `0x${(p.hi >>> 0).toString(16)}${(p.lo >>> 0).toString(16).padStart(8, "0")}`;
const bit = (p: Packet, flag: number): string => (p.flags & flag ? "0x1" : "0x0");

/** PWRE's HW bit as libipt 2.0.5 reads it: bit 3 of the byte after the opcode. */
const libiptPwreHw = (buf: Uint8Array, offset: number): string => (buf[offset + 2]! & 0x08 ? "0x1" : "0x0");

/**
 * A decoded packet as the harness prints it (`P` line). `buf`: the trace, for the
 * fields libipt reads elsewhere than ptkit (PWRE's HW, see below).
 */
export function packetLine(offset: number, p: Packet, buf?: Uint8Array): string {
  const head = `P ${hex8(offset)} ${p.size} `;
  switch (p.type) {
    case PacketType.Pad:
      return `${head}pad`;
    case PacketType.Psb:
      return `${head}psb`;
    case PacketType.PsbEnd:
      return `${head}psbend`;
    case PacketType.Ovf:
      return `${head}ovf`;
    case PacketType.Stop:
      return `${head}stop`;
    case PacketType.Tnt8:
      return `${head}tnt.8 bit_size=${x(p.a)} payload=${x64(p)}`;
    case PacketType.Tnt64:
      return `${head}tnt.64 bit_size=${x(p.a)} payload=${x64(p)}`;
    case PacketType.Tip:
      return `${head}tip ipc=${x(p.a)} ip=${x64(p)}`;
    case PacketType.TipPge:
      return `${head}tip.pge ipc=${x(p.a)} ip=${x64(p)}`;
    case PacketType.TipPgd:
      return `${head}tip.pgd ipc=${x(p.a)} ip=${x64(p)}`;
    case PacketType.Fup:
      return `${head}fup ipc=${x(p.a)} ip=${x64(p)}`;
    case PacketType.ModeExec:
      // libipt 2.0.5's pt_packet_mode_exec has csl and csd only: Flag.If is not compared.
      return `${head}mode.exec csl=${bit(p, Flag.CsL)} csd=${bit(p, Flag.CsD)}`;
    case PacketType.ModeTsx:
      return `${head}mode.tsx intx=${bit(p, Flag.InTx)} abrt=${bit(p, Flag.Abort)}`;
    case PacketType.Pip:
      return `${head}pip cr3=${x64(p)} nr=${bit(p, Flag.Nr)}`;
    case PacketType.Vmcs:
      return `${head}vmcs base=${x64(p)}`;
    case PacketType.Cbr:
      return `${head}cbr ratio=${x(p.a)}`;
    case PacketType.Tsc:
      return `${head}tsc tsc=${x64(p)}`;
    case PacketType.Tma:
      return `${head}tma ctc=${x(p.a)} fc=${x(p.b)}`;
    case PacketType.Mtc:
      return `${head}mtc ctc=${x(p.a)}`;
    case PacketType.Cyc:
      return `${head}cyc value=${x64(p)}`;
    case PacketType.Mnt:
      return `${head}mnt payload=${x64(p)}`;
    case PacketType.Exstop:
      return `${head}exstop ip=${bit(p, Flag.Ip)}`;
    case PacketType.Mwait:
      return `${head}mwait hints=${x(p.a)} ext=${x(p.b)}`;
    case PacketType.Pwre:
      // libipt's deviation: it reads HW at bit 3 of byte 2 (pt_pl_pwre_hw_mask 0x8), where
      // the SDM (Vol. 3C Table 36-43) and perf have bit 7, which ptkit follows. Compared is
      // everything else: libipt's reading stands in for ptkit's here.
      return `${head}pwre state=${x(p.a)} sub_state=${x(p.b)} hw=${buf ? libiptPwreHw(buf, offset) : bit(p, Flag.Hw)}`;
    case PacketType.Pwrx:
      return (
        `${head}pwrx last=${x(p.a)} deepest=${x(p.b)} interrupt=${bit(p, Flag.WakeInt)} ` +
        `store=${bit(p, Flag.WakeStore)} autonomous=${bit(p, Flag.WakeHw)}`
      );
    case PacketType.Ptw: {
      // libipt reports the payload-size code (plc 0 = 4 bytes, 1 = 8 bytes).
      const plc = p.a === 4 ? "0x0" : p.a === 8 ? "0x1" : `<payload bytes ${p.a}>`;
      return `${head}ptw plc=${plc} ip=${bit(p, Flag.Ip)} payload=${x64(p)}`;
    }
  }
  // A type libipt 2.0.5 does not have: printed so that it can never match.
  return `${head}${PACKET_NAMES[p.type]} a=${x(p.a)} b=${x(p.b)} flags=${x(p.flags)} payload=${x64(p)} (ptkit only)`;
}

/** Packet types ptkit decodes (following libipt HEAD) that libipt 2.0.5 does not know. */
export const PTKIT_ONLY_TYPES: ReadonlySet<number> = new Set([
  PacketType.Cfe,
  PacketType.Evd,
  PacketType.Trig,
  PacketType.Bbp,
  PacketType.Bip,
  PacketType.Bep,
]);

/**
 * Whether the bytes at `pos` start a packet libipt 2.0.5 has no opcode for but ptkit
 * decodes: TRIG (D9), CFE (02 13), EVD (02 53), BBP (02 63), BEP (02 33, 02 B3). BIP
 * needs a preceding BBP, which the 2.0.5 model already rejects, so it never arises.
 * libipt 2.0.5 reports -pte_bad_opc for all of these, whatever follows (even when the
 * packet would be truncated, where ptkit says -Eos).
 */
export function isPtkitOnlyOpcode(buf: Uint8Array, pos: number): boolean {
  const b0 = buf[pos];
  if (b0 === 0xd9) return true;
  if (b0 !== 0x02 || pos + 1 >= buf.length) return false;
  const b1 = buf[pos + 1];
  return b1 === 0x13 || b1 === 0x53 || b1 === 0x63 || b1 === 0x33 || b1 === 0xb3;
}

export interface PtkitOptions {
  mode: Mode;
  /**
   * Model libipt 2.0.5's opcode table: treat an opcode of {@link isPtkitOnlyOpcode} as
   * -BadOpcode (and resync) instead of decoding it. Off for the strict comparison.
   */
  model205?: boolean;
  /**
   * Stop after this many lines (with a marker line), so that a ptkit that loops (say,
   * resyncs backwards) fails instead of exhausting memory. Pass libipt's line count.
   */
  maxLines?: number;
}

/** ptkit's decode of `buf` as harness lines (the C harness's `dump` loop, with PacketDecoder). */
export function ptkitLines(buf: Uint8Array, opts: PtkitOptions): string[] {
  const dec = new PacketDecoder(buf);
  const pkt = new Packet();
  const out: string[] = [];
  const maxLines = opts.maxLines ?? Number.POSITIVE_INFINITY;
  let status = opts.mode === "at0" ? dec.syncSet(0) : dec.syncForward();
  while (status >= 0) {
    out.push(`S ${hex8(dec.offset)}`);
    let offset: number;
    let size: number;
    for (;;) {
      if (out.length >= maxLines) {
        out.push(`<ptkit output cut after ${maxLines} lines>`);
        return out;
      }
      offset = dec.offset;
      if (opts.model205 && isPtkitOnlyOpcode(buf, offset)) {
        size = -ErrorCode.BadOpcode;
        break;
      }
      size = dec.next(pkt);
      if (size < 0) break;
      out.push(packetLine(offset, pkt, buf));
    }
    out.push(`E ${hex8(offset)} ${code(size)}`);
    if (size === -ErrorCode.Eos) return out;
    status = dec.syncForward();
  }
  out.push(`X ${code(status)}`);
  return out;
}

/** The offset a harness line refers to (S, E, P lines), or undefined. */
export function lineOffset(line: string | undefined): number | undefined {
  const m = line === undefined ? null : /^[SEP] ([0-9a-f]+)/.exec(line);
  return m ? Number.parseInt(m[1]!, 16) : undefined;
}

/** Index of the first line where the two lists differ, or -1. */
export function firstDifference(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** A hex dump of `buf` around `offset` (16 bytes a row, the byte at `offset` in brackets). */
export function hexExcerpt(buf: Uint8Array, offset: number, before = 32, after = 48): string {
  const start = Math.max(0, (offset - before) & ~15);
  const end = Math.min(buf.length, offset + after);
  const rows: string[] = [];
  for (let row = start; row < end; row += 16) {
    let s = `  ${hex8(row)}:`;
    for (let i = row; i < Math.min(row + 16, end); i++) {
      const b = buf[i]!.toString(16).padStart(2, "0");
      s += i === offset ? `[${b}]` : ` ${b} `;
    }
    rows.push(s.trimEnd());
  }
  if (rows.length === 0)
    rows.push(`  (offset 0x${offset.toString(16)} is at or past the end, ${buf.length} bytes)`);
  return rows.join("\n");
}

let failureDir: string | undefined;

/** Whether a failing input was saved (then the compiled harness is kept for replaying it). */
export const savedFailures = (): boolean => failureDir !== undefined;

/** Save a failing input under a kept temporary directory; returns its path. */
export function saveFailure(name: string, buf: Uint8Array): string {
  failureDir ??= mkdtempSync(join(tmpdir(), "ptkit-libipt-diff-fail-"));
  const path = join(failureDir, name.replace(/[^A-Za-z0-9._-]+/g, "_"));
  writeFileSync(path, buf);
  return path;
}

/**
 * Describe a mismatch: the first differing line with its neighbours, a hex excerpt
 * around its offset, and where the input was saved (with the command to replay it).
 */
export function describeMismatch(
  what: string,
  buf: Uint8Array,
  mode: Mode,
  libipt: readonly string[],
  ptkit: readonly string[],
  bin: string,
  savedPath?: string,
): string {
  const i = firstDifference(libipt, ptkit);
  const offset = lineOffset(libipt[i]) ?? lineOffset(ptkit[i]) ?? lineOffset(libipt[i - 1]) ?? 0;
  const path = savedPath ?? saveFailure(`${what}.${mode}.bin`, buf);
  return (
    `${what} (${mode}, ${buf.length} bytes): first difference at line ${i + 1} ` +
    `(libipt ${libipt.length} lines, ptkit ${ptkit.length})\n` +
    `  previous: ${libipt[i - 1] ?? "<start>"}\n` +
    `  libipt:   ${libipt[i] ?? "<end>"}\n` +
    `  ptkit:    ${ptkit[i] ?? "<end>"}\n` +
    `bytes around 0x${offset.toString(16)}:\n${hexExcerpt(buf, offset)}\n` +
    `input saved to ${path} (replay: ${bin} --${mode} ${path})`
  );
}

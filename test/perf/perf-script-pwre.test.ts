/**
 * PWRE's HW bit: bit 7 of the byte after the opcode (SDM Vol. 3C Table 36-43), where
 * perf reads it (libipt 2.0.5 reads bit 3). perf script's pwre line says hw: 1 for
 * bit 7 and hw: 0 for bit 3 alone; a PWRE without an MWAIT before it shows the last
 * MWAIT-bound one's payload, as perf's decoder keeps it. Checked against perf script
 * where it is installed.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { decodePacket } from "../../src/packet/decode.js";
import { Flag, Packet, PacketType } from "../../src/packet/types.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { insn } from "./pt-file.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const noPerf = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-pwre-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;

/**
 * nop; mwait; nop; nop; hlt: the MWAIT enters C2.1 (its PWRE with HW set, bound to the
 * MWAIT's FUP), then hardware enters C1 after the next nop (a PWRE without MWAIT);
 * `patch` edits the trace first.
 */
function pwreData(name: string, patch: (trace: Uint8Array) => void = () => {}): string {
  const code = Uint8Array.from([0x90, 0x0f, 0x01, 0xc9, 0x90, 0x90, 0xf4]);
  const exec = [
    insn(BASE, 1),
    insn(BASE + 1n, 3, "mwait"),
    JSON.stringify({ k: "mwait", hints: 0x10, ext: 1 }),
    JSON.stringify({ k: "sleep", cstate: 2, substate: 1, hw: true }),
    JSON.stringify({ k: "wake", last: 2, deepest: 2, reasons: ["interrupt"] }),
    insn(BASE + 4n, 1),
    JSON.stringify({ k: "sleep", cstate: 1, substate: 0, hw: true }),
    JSON.stringify({ k: "wake", last: 1, deepest: 1, reasons: ["hw"] }),
    insn(BASE + 5n, 1),
    JSON.stringify({ k: "end", ip: `0x${(BASE + 6n).toString(16)}` }),
  ];
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, `${name}.elf`);
  writeFileSync(prog, elf.bytes);
  const ctl = { ...BRANCHES, TSCEn: 1, PwrEvtEn: 1 };
  const m = msrs({ ctl, caps: { powerEventTrace: true } });
  const trace = generate(readExecJsonl(`${exec.join("\n")}\n`), { msrs: m }).bytes;
  patch(trace);
  // perf synthesizes power events only when the event's config asks for them (pwr_evt).
  const file = new PtFile({ perfScript: true, config: 1n << 4n })
    .comm(100, "hw", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(trace);
  const data = join(dir, `${name}.data`);
  writeFileSync(data, fileMode(file.built()));
  return data;
}

/** The offset of the trace's first PWRE (02 22). */
function pwreAt(trace: Uint8Array): number {
  for (let i = 0; i + 1 < trace.length; i++) if (trace[i] === 0x02 && trace[i + 1] === 0x22) return i;
  throw new Error("no PWRE");
}

const ptkit = (args: string[]) => okOut(ptkitPerfRun(args, dir));
const perfScript = (args: string[]) => okOut(perfScriptRun(args, dir), "perf script");

test("the packet layer reads and writes PWRE's HW at bit 7 of byte 2", () => {
  const pkt = new Packet();
  assert.equal(decodePacket(Uint8Array.from([0x02, 0x22, 0x80, 0x10]), 0, 4, pkt, 0, 0), 4);
  assert.deepEqual([pkt.type, pkt.a, pkt.b, pkt.flags & Flag.Hw], [PacketType.Pwre, 1, 0, Flag.Hw]);
  // Bit 3 (libipt 2.0.5's HW) is reserved.
  assert.equal(decodePacket(Uint8Array.from([0x02, 0x22, 0x08, 0x10]), 0, 4, pkt, 0, 0), 4);
  assert.equal(pkt.flags & Flag.Hw, 0);
});

test("perf script's pwre lines: hw: 1 for bit 7, hw: 0 for bit 3 alone (an MWAIT's PWRE, then one without)", () => {
  const args = (data: string) => ["-i", data, "--itrace=p", "-F", "synth"];
  const hw = pwreData("hw");
  const bit3 = pwreData("bit3", (t) => {
    t[pwreAt(t) + 2] = 0x08;
  });
  const pwres = (out: string) =>
    out
      .split("\n")
      .filter((l) => l.includes(" sub-cstate: "))
      .map((l) => l.trim());
  // perf shows the payload of the PWRE bound to the MWAIT for the one after it as well.
  assert.deepEqual(pwres(ptkit(args(hw))), Array(2).fill("hw: 1 cstate: 2 sub-cstate: 1"));
  assert.deepEqual(pwres(ptkit(args(bit3))), Array(2).fill("hw: 0 cstate: 2 sub-cstate: 1"));
  if (!noPerf) {
    assert.equal(ptkit(args(hw)), perfScript(args(hw)));
    assert.equal(ptkit(args(bit3)), perfScript(args(bit3)));
  }
});

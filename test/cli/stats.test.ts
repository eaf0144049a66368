/** `ptkit stats` and the statistics behind it. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { BUNDLED_SAMPLE } from "../../src/cli/demo/sample.js";
import { main } from "../../src/cli/ptkit.js";
import { collectStats, ErrorCode, Packet, PacketEncoder, PacketType } from "../../src/packet/index.js";
import { captureIo } from "../conformance/ptt.js";

/** 3 junk bytes, PSB, PSBEND, TNT-8, TIP, a bad opcode, 2 junk bytes, PSB, PAD, and a TSC cut short. */
function trace(): { bytes: Uint8Array; badAt: number; secondPsb: number } {
  const enc = new PacketEncoder();
  const pkt = new Packet();
  const emit = (type: PacketType, set?: (p: Packet) => void) => {
    pkt.clear().type = type;
    set?.(pkt);
    assert.ok(enc.emit(pkt) > 0);
  };
  emit(PacketType.Psb);
  emit(PacketType.PsbEnd);
  emit(PacketType.Tnt8, (p) => {
    p.a = 3;
    p.lo = 0b101;
  });
  enc.emitIp(PacketType.Tip, 0xffffffff, 0x81000000);
  const first = enc.bytes().slice();
  const tail = new PacketEncoder();
  pkt.clear().type = PacketType.Psb;
  tail.emit(pkt);
  pkt.clear().type = PacketType.Pad;
  tail.emit(pkt);
  const psb2 = tail.bytes();
  const badAt = 3 + first.length;
  const bytes = Uint8Array.from([0x55, 0x55, 0x55, ...first, 0xc9, 0x55, 0x55, ...psb2, 0x19, 0x01, 0x02]);
  return { bytes, badAt, secondPsb: badAt + 3 };
}

describe("collectStats", () => {
  const { bytes, badAt, secondPsb } = trace();
  const stats = collectStats(bytes);

  test("counts packets and bytes per type", () => {
    assert.equal(stats.counts[PacketType.Psb], 2);
    assert.equal(stats.counts[PacketType.Tip], 1);
    assert.equal(stats.typeBytes[PacketType.Tip], 7);
    assert.equal(stats.counts[PacketType.Pad], 1);
    assert.equal(stats.packets, 6);
    assert.deepEqual(stats.psbOffsets, [3, secondPsb]);
  });

  test("reports errors with offset, code and byte, and what was skipped", () => {
    assert.deepEqual(stats.errors, [{ offset: badAt, code: -ErrorCode.BadOpcode, byte: 0xc9 }]);
    assert.equal(stats.errorCount, 1);
    assert.equal(stats.skippedBytes, 3 + 3);
    assert.equal(stats.truncatedBytes, 3);
  });

  test("limits the recorded errors but counts all", () => {
    const many = new Uint8Array([...bytes, ...bytes, ...bytes]);
    const s = collectStats(many, { maxErrors: 2 });
    assert.equal(s.errorCount, 3);
    assert.equal(s.errors.length, 2);
  });

  test("an empty or PSB-less buffer is all skipped", () => {
    const s = collectStats(new Uint8Array(100).fill(0x55));
    assert.equal(s.packets, 0);
    assert.equal(s.skippedBytes, 100);
  });
});

describe("ptkit stats", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-stats-"));
  const { bytes, badAt } = trace();
  writeFileSync(join(dir, "t.pt"), bytes);
  const run = async (...argv: string[]) => {
    const io = captureIo(dir);
    const code = await main(["stats", ...argv], io);
    return { code, out: io.out.join(""), err: io.err.join("") };
  };

  test("text report", async () => {
    const r = await run("t.pt");
    assert.equal(r.code, 0);
    assert.match(r.out, /^packets\s+6$/m);
    assert.match(r.out, /^psb segments\s+2$/m);
    assert.match(r.out, new RegExp(`\\[${badAt.toString(16)}: unknown opcode \\(byte 0xc9\\)\\]`));
    assert.match(r.out, /^tip\s+1\s+7\s/m);
    assert.match(r.out, /MB\/s/);
  });

  test("JSON report", async () => {
    const j = JSON.parse((await run("--json", "t.pt")).out);
    assert.equal(j.packets, 6);
    assert.deepEqual(j.counts.psb, { packets: 2, bytes: 32 });
    assert.deepEqual(j.errors, [{ offset: badAt, byte: 0xc9, error: "unknown opcode" }]);
    assert.equal(j.truncatedBytes, 3);
  });

  test("usage errors", async () => {
    assert.equal((await run()).code, 1);
    assert.match((await run("--bogus", "t.pt")).err, /Unknown option '--bogus'/);
    assert.match((await run("nope.pt")).err, /failed to open nope\.pt/);
    assert.match((await run("--help")).out, /usage: ptkit stats/);
    assert.match((await run("--help")).out, /^examples:\n {2}ptkit stats trace\.pt\n/m);
  });

  test("errors say what to do next", async () => {
    const none = await run();
    assert.match(
      none.err,
      /expected exactly one trace file\.\nusage: ptkit stats .*\nexample: ptkit stats trace\.pt\n/,
    );
    assert.match(
      (await run("nope.pt")).err,
      new RegExp(
        `failed to open nope\\.pt: no such file \\(looked for ${join(dir, "nope.pt")}; the current directory is ${dir}\\)`,
      ),
    );
    const elf = await run(join(BUNDLED_SAMPLE, "sample.elf"));
    assert.equal(elf.code, 1);
    assert.match(elf.err, /sample\.elf is an ELF file \(a program or library\), not a trace/);
    writeFileSync(join(dir, "run.jsonl"), '{"k":"insn","ip":"0x401000","size":2,"class":"other"}\n');
    const exec = await run("run.jsonl");
    assert.equal(exec.code, 0, "the statistics of what may still be a trace");
    assert.match(exec.out, /^psb segments 0$/m);
    assert.match(exec.err, /run\.jsonl looks like an execution .*'ptkit simulate -o trace\.pt run\.jsonl'/);
  });

  test("a progress bar on a terminal only", async () => {
    const pads = new Uint8Array(3 << 20);
    pads.set(bytes);
    writeFileSync(join(dir, "big.pt"), pads);
    const io = { ...captureIo(dir), stderrIsTty: true };
    assert.equal(await main(["stats", "big.pt"], io), 0);
    const err = io.err.join("");
    assert.match(err, /^\rdecoding \[#* *\] \d+%/);
    assert.ok(err.endsWith("\r\x1b[K"), "the bar is cleared");
    assert.equal((await run("big.pt")).err, "");
  });
});

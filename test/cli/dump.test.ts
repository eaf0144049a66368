/** `ptkit dump` behaviour beyond the conformance suite: options, ranges, errors. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { BUNDLED_SAMPLE } from "../../src/cli/demo/sample.js";
import { main } from "../../src/cli/ptkit.js";
import { Packet, PacketEncoder, PacketType } from "../../src/packet/index.js";
import { captureIo } from "../conformance/ptt.js";

/** A small trace: PSB, PSBEND, a TIP to a kernel address, a TNT, then junk. */
function sampleTrace(): Uint8Array {
  const enc = new PacketEncoder();
  const pkt = new Packet();
  pkt.type = PacketType.Psb;
  enc.emit(pkt);
  pkt.type = PacketType.PsbEnd;
  enc.emit(pkt);
  enc.emitIp(PacketType.Tip, 0xffffffff, 0x81000000);
  enc.emitIp(PacketType.Tip, 0xffffffff, 0x81000010);
  return enc.bytes();
}

async function run(dir: string, ...argv: string[]) {
  const io = captureIo(dir);
  const code = await main(argv, io);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

describe("ptkit dump", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-dump-"));
  const trace = sampleTrace();
  writeFileSync(join(dir, "t.pt"), trace);
  writeFileSync(join(dir, "junk.pt"), Uint8Array.from([0x02, 0x82, ...trace, 0xc9, 0x00, ...trace]));

  test("prints one line per packet with offsets and exact kernel IPs", async () => {
    const r = await run(dir, "dump", "--lastip", "t.pt");
    assert.equal(r.code, 0);
    assert.deepEqual(
      r.out.split("\n").map((l) => l.replace(/ +/g, " ")),
      [
        "0000000000000000 psb",
        "0000000000000010 psbend",
        "0000000000000012 tip 3: ffffffff81000000 ip ffffffff81000000",
        "0000000000000019 tip 1: ????????????0010 ip ffffffff81000010",
        "",
      ],
    );
  });

  test("reports a decode error with its offset and resumes at the next PSB", async () => {
    const r = await run(dir, "dump", "--no-offset", "junk.pt");
    const lines = r.out.trim().split("\n");
    const errorAt = 2 + trace.length;
    assert.ok(lines.includes(`[${errorAt.toString(16)}: error decoding packet: unknown opcode]`), r.out);
    assert.equal(
      lines.filter((l) => l.startsWith("psb ")).length + lines.filter((l) => l === "psb").length,
      2,
    );
  });

  test("a packet cut off by the end is noted on stderr, not in the listing", async () => {
    // The last TIP (update16) is 3 bytes; keep 1.
    writeFileSync(join(dir, "cut.pt"), trace.subarray(0, trace.length - 2));
    const r = await run(dir, "dump", "cut.pt");
    assert.equal(r.code, 0);
    assert.equal(r.out.trim().split("\n").length, 3);
    assert.match(
      r.err,
      /^ptkit dump: cut\.pt: a packet cut off by the end of the trace \(1 byte\) at offset 0x19$/m,
    );
  });

  test("a file range is dumped with offsets relative to its start", async () => {
    const r = await run(dir, "dump", "--no-sync", "t.pt:0x10-0x12");
    assert.equal(r.out.replace(/ +/g, " "), "0000000000000000 psbend\n");
  });

  test("bad ranges and files are errors on stderr with exit code 1", async () => {
    assert.match((await run(dir, "dump", "t.pt:0x100")).err, /bad offset 0x100 into t\.pt/);
    assert.match((await run(dir, "dump", "t.pt:0x0-0x100")).err, /bad range 0x100 in t\.pt/);
    assert.match((await run(dir, "dump", "t.pt:8-4")).err, /bad file t\.pt:8-4/);
    assert.match((await run(dir, "dump", "missing.pt")).err, /failed to open missing\.pt/);
    assert.equal((await run(dir, "dump", "missing.pt")).code, 1);
  });

  test("option errors", async () => {
    assert.match((await run(dir, "dump", "--time", "--tcal", "t.pt")).err, /specify either --time or --tcal/);
    assert.match((await run(dir, "dump", "--bogus", "t.pt")).err, /unknown option: --bogus/);
    assert.match((await run(dir, "dump", "--mtc-freq", "256", "t.pt")).err, /--mtc-freq: value too big: 256/);
    assert.match((await run(dir, "dump", "--mtc-freq", "x", "t.pt")).err, /--mtc-freq: bad argument: x/);
    assert.match((await run(dir, "dump", "--cpu", "6", "t.pt")).err, /cpu must be specified as f\/m\[\/s\]/);
    assert.match((await run(dir, "dump")).err, /No processor trace file specified/);
    assert.equal((await run(dir, "dump", "--bogus")).code, 1);
  });

  test("an unknown CPU is reported and decoding follows the spec", async () => {
    const r = await run(dir, "dump", "--cpu", "6/1", "t.pt");
    assert.equal(r.out.split("\n")[0], "[0: failed to determine errata: unknown cpu]");
    assert.equal(r.code, 0);
  });

  test("--help lists every ptdump option with examples", async () => {
    const r = await run(dir, "dump", "--help");
    assert.equal(r.code, 0);
    for (const opt of [
      "--no-sync",
      "--quiet",
      "--no-pad",
      "--no-timing",
      "--no-cyc",
      "--no-offset",
      "--raw",
      "--lastip",
      "--exec-mode",
      "--time",
      "--tcal",
      "--time-delta",
      "--no-tcal",
      "--no-wall-clock",
      "--keep-tcal-on-ovf",
      "--cpu",
      "--mtc-freq",
      "--nom-freq",
      "--cpuid-0x15.eax",
      "--cpuid-0x15.ebx",
    ]) {
      assert.ok(r.out.includes(opt), `help lacks ${opt}`);
    }
    assert.match(r.out, /examples:/);
  });

  test("--quiet prints only errors; --raw shows packet bytes", async () => {
    assert.equal((await run(dir, "dump", "--quiet", "t.pt")).out, "");
    const raw = (await run(dir, "dump", "--raw", "--no-offset", "t.pt")).out.split("\n")[1]!;
    assert.match(raw, /^0223 +psbend$/);
  });

  test("--quiet prints the errors the full dump prints, with or without tracking", async () => {
    for (const extra of [[], ["--lastip"], ["--time"], ["--tcal"]]) {
      const full = (await run(dir, "dump", ...extra, "junk.pt")).out.split("\n");
      const errors = full.filter((l) => l.startsWith("["));
      assert.ok(
        errors.some((l) => l.includes("error decoding packet")),
        full.join("\n"),
      );
      const quiet = await run(dir, "dump", "--quiet", ...extra, "junk.pt");
      assert.equal(quiet.out, errors.map((l) => `${l}\n`).join(""), extra.join(" "));
    }
  });
});

describe("ptkit dump: what to do next, and progress", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-dump-help-"));
  writeFileSync(join(dir, "perf.data"), new TextEncoder().encode("PERFILE2".padEnd(104, "\0")));
  writeFileSync(join(dir, "notes.txt"), "some notes\nabout a trace\n");
  writeFileSync(join(dir, "noise.bin"), new Uint8Array(300).fill(0xc9));
  const elf = join(BUNDLED_SAMPLE, "sample.elf");

  test("no file: the usage and an example", async () => {
    const r = await run(dir, "dump");
    assert.equal(r.code, 1);
    assert.match(r.err, /\nusage: ptkit dump \[<options>\] <ptfile>.*\nexample: ptkit dump trace\.pt\n/);
  });

  test("a missing file: the path looked for and the current directory", async () => {
    const r = await run(dir, "dump", "sub/missing.pt");
    assert.equal(r.code, 1);
    assert.equal(
      r.err,
      `ptkit dump: failed to open sub/missing.pt: no such file (looked for ${join(dir, "sub/missing.pt")}; ` +
        `the current directory is ${dir}).\n`,
    );
  });

  test("a program, a perf.data file: what they are and the command that takes them", async () => {
    const e = await run(dir, "dump", elf);
    assert.equal(e.code, 1);
    assert.equal(e.out, "");
    assert.match(
      e.err,
      /is an ELF file \(a program or library\), not a trace: .*'ptkit flow --elf .*sample\.elf --pt <trace>'/,
    );
    const p = await run(dir, "dump", "perf.data");
    assert.equal(p.code, 1);
    assert.match(p.err, /perf\.data looks like a perf\.data file: use 'ptkit perf perf\.data'/);
    writeFileSync(join(dir, "t.pt.gz"), Uint8Array.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0]));
    assert.match((await run(dir, "dump", "t.pt.gz")).err, /t\.pt\.gz is compressed: decompress it first/);
  });

  test("no PSB: what the file looks like, or how to dump it anyway", async () => {
    const text = await run(dir, "dump", "notes.txt");
    assert.equal(text.out, "");
    assert.match(text.err, /notes\.txt is text, not a binary Intel PT trace/);
    const noise = await run(dir, "dump", "noise.bin");
    assert.match(noise.err, /noise\.bin: no PSB packet .* at offset 0x0: ptkit dump --no-sync/);
    assert.equal((await run(dir, "dump", "--no-sync", "noise.bin")).err, "");
  });

  test("a progress bar on a terminal only, cleared before the listing", async () => {
    // PSB, PSBEND and 200,000 PADs: several progress reports.
    const enc = new PacketEncoder();
    const pkt = new Packet();
    pkt.type = PacketType.Psb;
    enc.emit(pkt);
    pkt.type = PacketType.PsbEnd;
    enc.emit(pkt);
    writeFileSync(join(dir, "pads.pt"), Uint8Array.from([...enc.bytes(), ...new Uint8Array(200_000)]));
    const io = { ...captureIo(dir), stderrIsTty: true };
    const chunks: string[] = [];
    io.stdout = (t) => chunks.push(t);
    io.stderr = (t) => chunks.push(`<err>${t}`);
    assert.equal(await main(["dump", "--no-pad", "pads.pt"], io), 0);
    assert.ok(
      chunks.some((c) => /^<err>\rdumping \[#* *\] \d+%$/.test(c)),
      "a bar",
    );
    const bars = chunks.filter((c) => c.startsWith("<err>"));
    assert.equal(bars.at(-1), "<err>\r\x1b[K", "cleared at the end");
    // Every piece of the listing comes after the bar was cleared.
    chunks.forEach((c, i) => {
      if (!c.startsWith("<err>") && i > 0) assert.equal(chunks[i - 1], "<err>\r\x1b[K");
    });
    assert.equal((await run(dir, "dump", "--no-pad", "pads.pt")).err, "");
  });
});

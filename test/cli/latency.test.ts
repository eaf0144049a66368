/**
 * `ptkit latency` and `--latency FILE`: on a HASE perf.data capture the report names
 * the binary's real functions (each name is in its string table), the JSON parses and
 * is what `ptkit perf --latency` writes, byte for byte, and its counts and maxima are
 * those of the timeline written by the same decode; on a raw trace through `ptkit flow`
 * the same. Bad input is one line on stderr and a non-zero exit.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { callProgram } from "../analysis/export-trace.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-latency-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function ptkit(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo(dir);
  const code = await main(args, io);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

interface LatencyDoc {
  schema: string;
  version: number;
  clock: string;
  timeUnit: string;
  calls: number;
  functions: { name: string; calls: number; max: number | null; incomplete: number; p50: number | null }[];
  slowest: { name: string; duration: number; stack: string[] }[];
}

/** Per name, the timeline's frames that returned (no "frame-end" instant says otherwise). */
function returnedSlices(timelinePath: string): Map<string, number[]> {
  const doc = JSON.parse(readFileSync(timelinePath, "utf8")) as { traceEvents: object[] };
  const byName = new Map<string, number[]>();
  for (const f of timelineFrames(doc.traceEvents)) {
    if (f.end !== undefined) continue;
    byName.set(f.name, [...(byName.get(f.name) ?? []), f.stopNs - f.startNs]);
  }
  return byName;
}

/** The JSON's functions agree with the timeline's slices: calls and maxima. */
function assertLikeTimeline(doc: LatencyDoc, slices: Map<string, number[]>): void {
  for (const f of doc.functions) {
    const d = slices.get(f.name) ?? [];
    assert.equal(f.calls, d.length, `${f.name}: calls`);
    assert.equal(f.max, d.length > 0 ? Math.max(...d) : null, `${f.name}: max`);
  }
  assert.equal(
    doc.calls,
    [...slices.values()].reduce((n, d) => n + d.length, 0),
  );
}

/** The names in a little-endian ELF64 file's symbol tables (SHT_SYMTAB, SHT_DYNSYM), read here by hand. */
function symtabNames(elf: Buffer): string[] {
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const shentsize = elf.readUInt16LE(0x3a);
  const shnum = elf.readUInt16LE(0x3c);
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    return {
      type: elf.readUInt32LE(at + 4),
      offset: Number(elf.readBigUInt64LE(at + 0x18)),
      size: Number(elf.readBigUInt64LE(at + 0x20)),
      link: elf.readUInt32LE(at + 0x28),
    };
  };
  const names: string[] = [];
  for (let i = 0; i < shnum; i++) {
    const s = section(i);
    if (s.type !== 2 && s.type !== 11) continue;
    const strings = section(s.link);
    for (let at = s.offset; at + 24 <= s.offset + s.size; at += 24) {
      const from = strings.offset + elf.readUInt32LE(at);
      names.push(elf.toString("latin1", from, elf.indexOf(0, from)));
    }
  }
  return names;
}

const HASE = "real/hase";
const RUN = "2018-05/control_flow-20180515T180451";

describe("ptkit latency on a HASE capture", { skip: skipUnlessCorpus(HASE, RUN) }, () => {
  const data = corpusPath(HASE, RUN, "perf.data.1")!;
  const symfs = corpusPath(HASE, RUN, "binaries")!;
  const binary = join(symfs, "home/joerg/git/hase/tests/bin/control_flow/control_flow");

  test("the text report lists the binary's functions with their calls, and the slowest calls", async () => {
    const r = await ptkit("latency", "--symfs", symfs, data);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.err, "");
    const lines = r.out.split("\n");
    assert.match(lines[0]!, /^\d+ calls returned in \d+ functions/);
    assert.match(lines[1]!, /^durations in ns; percentiles nearest-rank/);
    // Function rows: calls total p50 p90 p99 max incomplete name.
    const rows = lines.filter((l) => /^ *\d+ +\d+ +(\d+|-) +(\d+|-) +(\d+|-) +(\d+|-) +\d+ +[^<\s]/.test(l));
    const names = rows.map((l) => l.trim().split(/ +/).at(-1)!);
    assert.ok(names.length > 10, r.out);
    for (const n of ["main", "__libc_start_main", "__init_libc"]) assert.ok(names.includes(n), n);
    // Every function name is a symbol of the binary, or a frame the trace entered
    // without showing where ([syscall], [interrupt]).
    const symbols = new Set(symtabNames(readFileSync(binary)));
    assert.ok(symbols.has("main"));
    for (const n of names)
      assert.ok(/^\[\w+\]$/.test(n) || symbols.has(n), `${n} is not a symbol of control_flow`);
    assert.ok(r.out.includes("\nslowest calls (up to 20):\n"));
    assert.match(r.out, /_start > _start_c > __libc_start_main > __init_libc\n/);
  });

  test("--json is --latency FILE's JSON, and agrees with the timeline", async () => {
    const json = await ptkit("latency", "--json", "--symfs", symfs, data);
    assert.equal(json.code, 0, json.err);
    const doc = JSON.parse(json.out) as LatencyDoc;
    assert.equal(doc.schema, "ptkit-latency");
    assert.equal(doc.version, 1);
    assert.equal(doc.clock, "ns");
    assert.ok(doc.functions.some((f) => f.name === "main"));
    const file = join(dir, "latency.json");
    const timeline = join(dir, "timeline.json");
    const perf = await ptkit("perf", "-q", "--symfs", symfs, "--latency", file, "--timeline", timeline, data);
    assert.equal(perf.code, 0, perf.err);
    assert.match(perf.out, /^wrote .*timeline\.json, .*latency\.json: /);
    assert.equal(readFileSync(file, "utf8"), json.out);
    assertLikeTimeline(doc, returnedSlices(timeline));
    // The slowest call is the longest slice.
    const longest = Math.max(...[...returnedSlices(timeline).values()].flat());
    assert.equal(doc.slowest[0]!.duration, longest);
  });

  test("--function and --top restrict the report", async () => {
    const r = await ptkit(
      "latency",
      "--function",
      "static_init_tls",
      "--top",
      "1",
      "--json",
      "--symfs",
      symfs,
      data,
    );
    assert.equal(r.code, 0, r.err);
    const doc = JSON.parse(r.out) as LatencyDoc;
    assert.deepEqual(
      doc.functions.map((f) => f.name),
      ["static_init_tls"],
    );
    assert.equal(doc.slowest.length, 1);
    assert.equal(doc.slowest[0]!.stack.at(-1), "static_init_tls");
    const none = await ptkit("latency", "--function", "init", "--symfs", symfs, data);
    assert.equal(none.code, 1);
    assert.equal(none.out, "");
    assert.match(none.err, /^ptkit latency: --function init: no function of that name .*__init_libc.*\.\n$/);
  });
});

test("a raw trace through ptkit flow: the report, and --latency FILE beside the timeline", async () => {
  const { asm, code, trace } = callProgram();
  writeFileSync(join(dir, "code.bin"), code);
  writeFileSync(join(dir, "trace.pt"), trace);
  const raw = ["--raw", `code.bin:0x${asm.base.toString(16)}`, "--nom-freq", "20"];
  const flow = await ptkit(
    "flow",
    ...raw,
    "--pt",
    "trace.pt",
    "--quiet",
    "--latency",
    "l.json",
    "--timeline",
    "t.json",
  );
  assert.equal(flow.code, 0, flow.err);
  const doc = JSON.parse(readFileSync(join(dir, "l.json"), "utf8")) as LatencyDoc;
  assert.equal(doc.timeUnit, "ns");
  assert.ok(doc.calls > 0);
  assertLikeTimeline(doc, returnedSlices(join(dir, "t.json")));
  const r = await ptkit("latency", "--json", ...raw, "--pt", "trace.pt");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, readFileSync(join(dir, "l.json"), "utf8"));
  // What the decode says goes to stderr, worded as this command's; stdout is the report.
  const text = await ptkit("latency", ...raw, "--pt", "trace.pt");
  assert.match(text.out, /^\d+ calls returned in \d+ functions/);
  assert.match(text.err, /^ptkit latency: warning: no symbols for 0x401000-/);
});

describe("bad input: one line on stderr, a non-zero exit", () => {
  const cases: [string, string[], RegExp][] = [
    [
      "a cut perf.data header",
      ["cut.data"],
      /^ptkit latency: cut\.data: not a perf\.data file: only 12 bytes/,
    ],
    ["a missing file", ["missing.data"], /^ptkit latency: failed to open missing\.data: no such file/],
    [
      "a raw trace without --pt",
      ["trace.pt"],
      /^ptkit latency: trace\.pt is a raw Intel PT trace: .*--pt trace\.pt\.$/,
    ],
    ["an ELF file", ["code.elf"], /^ptkit latency: code\.elf is an ELF file/],
  ];
  for (const [what, args, message] of cases) {
    test(what, async () => {
      writeFileSync(join(dir, "cut.data"), Buffer.from("PERFILE2\0\0\0\0"));
      writeFileSync(join(dir, "code.elf"), Buffer.from("\x7fELF\x02\x01\x01\0garbage"));
      writeFileSync(join(dir, "trace.pt"), callProgram().trace);
      const r = await ptkit("latency", ...args);
      assert.notEqual(r.code, 0);
      assert.equal(r.out, "");
      const lines = r.err.split("\n").filter((l) => l !== "");
      assert.equal(lines.length, 1, r.err);
      assert.match(lines[0]!, message);
    });
  }
  test("bad options say so, with the way to help", async () => {
    for (const args of [["--top"], ["--top", "many", "x.data"], ["--function"], []]) {
      const r = await ptkit("latency", ...args);
      assert.equal(r.code, 1);
      assert.match(r.err, /^ptkit latency: .*\nUse --help or -h for help\.\n$/);
    }
    const help = await ptkit("latency", "--help");
    assert.equal(help.code, 0);
    assert.match(help.out, /^usage: ptkit latency/);
  });
});

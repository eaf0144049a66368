/**
 * Start-up: each command loads only the modules it uses. What a command's process
 * loads is recorded by module-log.ts (a `--import` hook) and checked by name, not by
 * time: iced-x86 (the x86 decoder), the demangler, fzstd and the perf, analysis and
 * flow layers cost more to load than `stats` or `dump` of a small trace takes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/ptkit.js";
import { Flag, Packet, PacketEncoder, PacketType } from "../../src/packet/index.js";
import { captureIo } from "../conformance/ptt.js";
import { type Loaded, runLogged } from "./module-log.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/** The executable of this build (dist*\/src/cli/main.js beside dist*\/test/). */
const BIN = join(HERE, "..", "..", "src", "cli", "main.js");
/** This build's src/ directory, as the module URLs spell it. */
const SRC_URL = new URL("../../src/", import.meta.url).href;

/** PSB+, then (with `enable`) 64-bit code traced from 0x1000 until a TIP.PGD. */
function tinyTrace(enable: boolean): Uint8Array {
  const enc = new PacketEncoder();
  const pkt = new Packet();
  const emit = (type: PacketType, set: (p: Packet) => void = () => {}) => {
    pkt.clear();
    pkt.type = type;
    set(pkt);
    enc.emit(pkt);
  };
  emit(PacketType.Psb);
  emit(PacketType.PsbEnd);
  if (enable) {
    emit(PacketType.ModeExec, (p) => {
      p.flags = Flag.CsL;
    });
    enc.emitIp(PacketType.TipPge, 0, 0x1000);
    enc.emitSuppressed(PacketType.TipPgd);
  }
  return enc.bytes().slice();
}

const dir = mkdtempSync(join(tmpdir(), "ptkit-startup-"));
writeFileSync(join(dir, "tiny.pt"), tinyTrace(true));
writeFileSync(join(dir, "idle.pt"), tinyTrace(false));
/** nop; nop; jmp rax */
writeFileSync(join(dir, "code.bin"), Uint8Array.from([0x90, 0x90, 0xff, 0xe0]));

/** Run `ptkit ...args` in `dir` and record what it loads. */
const ptkit = (...args: string[]): Loaded => runLogged([BIN, ...args], dir);

/** The modules of ptkit's own src/ directory, as paths under it ("cli/stats.js"). */
const ownModules = (r: Loaded) =>
  r.modules.filter((m) => m.startsWith(SRC_URL)).map((m) => m.slice(SRC_URL.length));

/** The loaded modules that match `pattern`. */
const matching = (r: Loaded, pattern: RegExp) => r.modules.filter((m) => pattern.test(m));

const ICED = /[/\\]node_modules[/\\]iced-x86[/\\]/;
const DEMANGLER = /[/\\]node_modules[/\\]gecko-profiler-demangle[/\\]/;
const ZSTD = /[/\\]node_modules[/\\]fzstd[/\\]/;

/** Layers that commands reading packets only must not load. */
function assertNoHeavyLayers(r: Loaded, allowed: readonly string[] = []): void {
  assert.deepEqual(matching(r, ICED), [], "iced-x86");
  assert.deepEqual(matching(r, DEMANGLER), [], "gecko-profiler-demangle");
  assert.deepEqual(matching(r, ZSTD), [], "fzstd");
  const heavy = ownModules(r).filter(
    (m) => /^(isa|flow|perf|analysis|unit|image|event)\//.test(m) && !allowed.includes(m),
  );
  assert.deepEqual(heavy, []);
}

describe("start-up: commands load what they use", () => {
  test("--help and --version load no command", () => {
    for (const arg of ["--help", "--version"]) {
      const r = ptkit(arg);
      assert.equal(r.status, 0, r.stderr);
      assert.ok(ownModules(r).includes("cli/ptkit.js"), "the module log records ptkit's modules");
      // node/io.js: the process's adapter; session/io.js: the interface it implements;
      // node/graph-store.js: where decision graphs are kept (it loads node:crypto, and
      // nothing of the library, only when a graph is looked up, through
      // node/lazy-builtin.js), in the folder that node/cache-dir.js names;
      // node/walk-threads.js: ptkit perf's walk threads (node:worker_threads loads when
      // one starts, through node/lazy-builtin.js).
      const adapters = [
        "node/io.js",
        "session/io.js",
        "node/graph-store.js",
        "node/cache-dir.js",
        "node/lazy-builtin.js",
        "node/walk-threads.js",
      ];
      assert.deepEqual(
        ownModules(r).filter((m) => !m.startsWith("cli/") && !adapters.includes(m)),
        [],
      );
      // A command's modules are its folder, cli/COMMAND/.
      const commands = ownModules(r).filter((m) => /^cli\/[a-z]+\//.test(m));
      assert.deepEqual(commands, [], `${arg} loads a command`);
    }
  });

  test("stats loads the packet layer only", () => {
    const r = ptkit("stats", "tiny.pt");
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^psb segments 1$/m);
    assert.ok(ownModules(r).includes("packet/stats.js"));
    assertNoHeavyLayers(r);
    assert.deepEqual(
      ownModules(r).filter((m) => /^cli\/(dump|flow|perf|sideband|demo|simulate)/.test(m)),
      [],
    );
  });

  test("dump loads neither the decoder of instructions nor perf.data code (without --pevent)", () => {
    const r = ptkit("dump", "tiny.pt");
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^0000000000000000 {2}psb$/m);
    // The sideband format's two names, which the option parser knows, are all of perf it loads.
    assertNoHeavyLayers(r, ["perf/sideband-format.js"]);
  });

  test("flow loads iced-x86 only when it decodes an instruction", () => {
    const help = ptkit("flow", "--help");
    assert.equal(help.status, 0, help.stderr);
    assert.deepEqual(matching(help, ICED), [], "flow --help");
    const idle = ptkit("flow", "--raw", "code.bin:0x1000", "--pt", "idle.pt");
    assert.equal(idle.status, 0, idle.stderr);
    assert.doesNotMatch(idle.stdout, /nop/);
    assert.deepEqual(matching(idle, ICED), [], "a trace that enables no tracing");
    const r = ptkit("flow", "--raw", "code.bin:0x1000", "--pt", "tiny.pt");
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^0000000000001000 {2}nop$/m);
    assert.notDeepEqual(matching(r, ICED), [], "decoding loads iced-x86");
    // Without --pevent or analysis outputs: neither perf.data code nor the analysis
    // layer (but the leaves their options name, and what an ELF file is read for).
    assert.deepEqual(matching(r, DEMANGLER), [], "gecko-profiler-demangle");
    assert.deepEqual(matching(r, ZSTD), [], "fzstd");
    const allowed = ["perf/sideband-format.js", "analysis/callstack.js", "analysis/elf-needs.js"];
    assert.deepEqual(
      ownModules(r).filter((m) => /^(perf|analysis)\//.test(m) && !allowed.includes(m)),
      [],
    );
  });
});

test("analysis outputs load the demangler's glue only when a mangled name needs it", () => {
  // The call-stack outputs name frames through symbol tables that demangle (analysis/
  // demangle.js loads): code without symbols, so without mangled names.
  const r = ptkit("flow", "--raw", "code.bin:0x1000", "--pt", "tiny.pt", "--timeline", "t.json", "--quiet");
  assert.equal(r.status, 0, r.stderr);
  assert.ok(ownModules(r).includes("analysis/demangle.js"), "the timeline's names");
  assert.deepEqual(matching(r, DEMANGLER), [], "gecko-profiler-demangle");
});

test("without process.getBuiltinModule (Node before 20.16) ptkit loads iced-x86 up front, and decodes", () => {
  const r = spawnSync(
    process.execPath,
    [
      "--import",
      "data:text/javascript,delete process.getBuiltinModule",
      BIN,
      "flow",
      "--raw",
      "code.bin:0x1000",
      "--pt",
      "tiny.pt",
    ],
    { cwd: dir, encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^0000000000001000 {2}nop$/m);
});

describe("command dispatch", () => {
  test("only ptkit's commands are commands, not Object's properties", async () => {
    for (const name of ["constructor", "toString", "__proto__"]) {
      const io = captureIo(dir);
      assert.equal(await main([name], io), 1, name);
      assert.match(io.err.join(""), new RegExp(`^ptkit: unknown command '${name}'`));
    }
  });
});

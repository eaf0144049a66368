/**
 * The installed `ptkit` executable, end to end in a child process: package.json's
 * "bin", the bundle of the command that the build writes into dist/cli/ (see
 * tools/build/bundle-cli.ts).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { corpusPath, REPO_ROOT, skipUnlessCorpus } from "../corpus.js";
import { type Loaded, runLogged } from "./module-log.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/** The executable of this build (dist*\/cli/ptkit.js beside dist*\/test/). */
const BIN = join(HERE, "..", "..", "cli", "ptkit.js");
/** The modules it is bundled from (dist*\/src/cli/main.js), which still run as they are. */
const MAIN = join(HERE, "..", "..", "src", "cli", "main.js");
/** The bundle's directory and this build's src/, as module URLs spell them. */
const BUNDLE_URL = new URL("../../cli/", import.meta.url).href;
const SRC_URL = new URL("../../src/", import.meta.url).href;
const SAMPLE = join(REPO_ROOT, "sample");

const ptkit = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8" });

test("the bundle is built from these modules (not left from an earlier build)", () => {
  // tsc alone rebuilds dist/src but not the bundle: the tests below would run old code.
  const rebuild = "run node dist/tools/build/bundle-cli.js after tsc (npm run build does both)";
  assert.ok(existsSync(BIN), `no ${BIN}: ${rebuild}`);
  const built = statSync(BIN).mtimeMs;
  const src = fileURLToPath(SRC_URL);
  const newer = readdirSync(src, { recursive: true, encoding: "utf8" }).filter(
    (f) => f.endsWith(".js") && statSync(join(src, f)).mtimeMs > built,
  );
  assert.deepEqual(newer, [], `modules newer than the bundle: ${rebuild}`);
});

test("ptkit --help lists the commands; unknown commands fail", () => {
  const help = ptkit("--help");
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^ {2}demo /m);
  assert.match(help.stdout, /^ {2}dump /m);
  assert.match(help.stdout, /^ {2}stats /m);
  assert.match(help.stdout, /^examples:\n {2}ptkit demo\n/m);
  const bad = ptkit("frobnicate");
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /unknown command 'frobnicate'/);
});

test("the build leaves the executable runnable (npx ptkit after npm run build)", () => {
  // npm marks bins executable only when it links them at install time: every later
  // build re-emits them, and they must get their run bit back (main.js too, for
  // whoever runs the unbundled modules).
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  assert.deepEqual(pkg.bin, { ptkit: "dist/cli/ptkit.js" });
  assert.ok(pkg.files.includes("dist/cli"), "the bundle is in the package");
  for (const bin of [BIN, MAIN]) {
    const mode = statSync(bin).mode;
    assert.equal(mode & 0o111, 0o111, `${bin}: mode ${(mode & 0o777).toString(8)}`);
    const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^ptkit \d/);
  }
});

test("ptkit without arguments prints the usage and fails", () => {
  const r = ptkit();
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^usage: ptkit <command> \[<options>\]\n/);
});

test("npm start runs ptkit demo, which decodes the bundled sample from any directory", () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  assert.equal(pkg.scripts.start, "node dist/cli/ptkit.js demo");
  const r = spawnSync(process.execPath, [BIN, "demo", "--no-timeline"], {
    encoding: "utf8",
    cwd: mkdtempSync(join(tmpdir(), "ptkit-start-")),
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, "", "no progress bar in a pipe");
  assert.match(r.stdout, /^ {2}decoded +[\d,]+ instructions in \d+ functions, 0 errors$/m);
  assert.match(r.stdout, /^ {2}fib +[\d,]+ +\d+\.\d +5,167$/m);
});

test("a system error is one plain line, not a stack trace", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-bin-"));
  writeFileSync(join(dir, "out.txt"), "");
  // stdout open for reading only: every write fails with EBADF.
  const readOnly = openSync(join(dir, "out.txt"), "r");
  try {
    const r = spawnSync(process.execPath, [BIN, "--help"], {
      stdio: ["ignore", readOnly, "pipe"],
      encoding: "utf8",
    });
    assert.equal(r.status, 1);
    assert.equal(r.stderr, "ptkit: EBADF: bad file descriptor, write\n");
  } finally {
    closeSync(readOnly);
  }
});

test("ptkit dump on a real capture", {
  skip: skipUnlessCorpus("real/keeper-intelpt-summary/traced_data.bin"),
}, () => {
  const r = ptkit("dump", "--no-pad", corpusPath("real/keeper-intelpt-summary/traced_data.bin")!);
  assert.equal(r.status, 0);
  assert.equal(r.stderr, "");
  const lines = r.stdout.trimEnd().split("\n");
  assert.equal(lines[0], "0000000000000000  psb");
  // 7,966 packets of which 1,996 PADs.
  assert.equal(lines.length, 7966 - 1996);
});

/** ptkit's own files that `r` loaded, as names in the bundle's directory ("ptkit.js"). */
function bundleFiles(r: Loaded): string[] {
  const unbundled = r.modules.filter((m) => m.startsWith(SRC_URL));
  assert.deepEqual(unbundled, [], "the bundle loads none of dist/src");
  return r.modules.filter((m) => m.startsWith(BUNDLE_URL)).map((m) => m.slice(BUNDLE_URL.length));
}

/** The output of stats without its timing line. */
const untimed = (text: string) => text.replace(/^decoded in .*$/m, "");

describe("the bundle", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-bundle-"));

  test("stats loads the executable, the ES modules' entry and stats' chunks, fewer files than the modules, and no package", () => {
    const bundled = runLogged([BIN, "stats", "sample.pt"], SAMPLE);
    const modules = runLogged([MAIN, "stats", "sample.pt"], SAMPLE);
    assert.equal(bundled.status, 0, bundled.stderr);
    assert.equal(modules.status, 0, modules.stderr);
    assert.equal(untimed(bundled.stdout), untimed(modules.stdout));
    assert.match(bundled.stdout, /^psb segments 10$/m);
    const files = bundleFiles(bundled);
    assert.deepEqual(files.slice(0, 2), ["ptkit.js", "ptkit-esm.js"]);
    assert.ok(
      files.some((f) => /^stats-\w+\.js$/.test(f)),
      files.join(" "),
    );
    // Other commands' code stays in their own chunks, loaded on demand.
    assert.deepEqual(
      files.filter((f) => /^(dump|flow|perf|demo|simulate|record|symbols|workers)-/.test(f)),
      [],
    );
    assert.deepEqual(
      bundled.modules.filter((m) => /[/\\]node_modules[/\\]/.test(m)),
      [],
    );
    const own = modules.modules.filter((m) => m.startsWith(SRC_URL));
    assert.ok(files.length < own.length, `${files.length} files of the bundle, ${own.length} modules`);
  });

  test("flow runs from the executable and the commands' one CommonJS file, which no loader lists", () => {
    const args = ["flow", "--quiet", "--stat", "--elf", "sample.elf", "--pt", "sample.pt"];
    const bundled = runLogged([BIN, ...args], SAMPLE);
    const modules = runLogged([MAIN, ...args], SAMPLE);
    assert.equal(bundled.status, 0, bundled.stderr);
    assert.equal(bundled.stdout, modules.stdout);
    assert.match(bundled.stdout, /^insn: \d+\.$/m);
    // ptkit.js compiles the CommonJS file itself (src/node/code-cache.ts).
    assert.deepEqual(bundleFiles(bundled), ["ptkit.js"]);
    const commands = readdirSync(join(HERE, "..", "..", "cli"))
      .filter((f) => f.endsWith(".cjs"))
      .sort();
    assert.equal(commands.length, 2, commands.join(" "));
    assert.match(commands[0]!, /^ptkit-main-[\da-f]{16}\.cjs$/);
    assert.match(commands[1]!, /^ptkit-more-[\da-f]{16}\.cjs$/);
    // The first holds the commands of src/cli/bundled-commands.ts, not the others.
    const text = readFileSync(join(HERE, "..", "..", "cli", commands[0]!), "utf8");
    for (const run of ["runFlow", "runPerfCommand", "runLatency"])
      assert.match(text, new RegExp(`function ${run}\\(`), run);
    for (const run of ["runSimulate", "runWeb", "runDemo", "runStats"])
      assert.doesNotMatch(text, new RegExp(`function ${run}\\(`), run);
  });

  test("the other commands run from the second CommonJS file, which has them all", () => {
    const bundled = runLogged([BIN, "symbols", "--help"], SAMPLE);
    assert.equal(bundled.status, 0, bundled.stderr);
    assert.match(bundled.stdout, /^usage: ptkit symbols/);
    // ptkit.js compiles the CommonJS file itself, as for flow.
    assert.deepEqual(bundleFiles(bundled), ["ptkit.js"]);
    const more = readdirSync(join(HERE, "..", "..", "cli")).find((f) => /^ptkit-more-/.test(f))!;
    const text = readFileSync(join(HERE, "..", "..", "cli", more), "utf8");
    for (const run of ["runFlow", "runSimulate", "runWeb", "runSymbols"])
      assert.match(text, new RegExp(`function ${run}\\(`), run);
  });

  test("every command loads from the bundle: --help as the modules print it", () => {
    const help = ptkit("--help").stdout;
    const section = help.slice(
      help.indexOf("commands:\n"),
      help.indexOf("\n\n", help.indexOf("commands:\n")),
    );
    const commands = [...section.matchAll(/^ {2}([a-z-]+) /gm)].map((m) => m[1]!);
    assert.ok(commands.length >= 9, commands.join(" "));
    for (const command of commands) {
      const bundled = ptkit(command, "--help");
      assert.equal(bundled.status, 0, `${command}: ${bundled.stderr}`);
      assert.match(bundled.stdout, new RegExp(`^usage: ptkit ${command}`), command);
      const modules = spawnSync(process.execPath, [MAIN, command, "--help"], { encoding: "utf8" });
      assert.equal(bundled.stdout, modules.stdout, command);
    }
  });

  test("flow's parts, and the packages they load, work from the bundle", () => {
    // --afl-map alone (the coverage decode and the analysis outputs, whose symbol
    // tables would load the demangler at the first mangled name).
    const args = ["flow", "--quiet", "--elf", "sample.elf", "--pt", "sample.pt", "--afl-map"];
    const bundled = runLogged([BIN, ...args, join(dir, "bundled.bin")], SAMPLE);
    assert.equal(bundled.status, 0, bundled.stderr);
    assert.equal(bundled.stderr, "");
    bundleFiles(bundled);
    const modules = runLogged([MAIN, ...args, join(dir, "modules.bin")], SAMPLE);
    assert.equal(modules.status, 0, modules.stderr);
    const map = readFileSync(join(dir, "bundled.bin"));
    assert.ok(map.some((b) => b !== 0));
    assert.ok(map.equals(readFileSync(join(dir, "modules.bin"))), "the maps differ");
    // Instruction text: iced-x86, required from the bundle's chunks.
    const listing = ["flow", "--elf", "sample.elf", "--pt", "sample.pt:0-0x100"];
    const text = runLogged([BIN, ...listing], SAMPLE);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /^0000000000400150 {2}ret$/m);
    bundleFiles(text);
    assert.ok(text.modules.some((m) => /[/\\]node_modules[/\\]iced-x86[/\\]/.test(m)));
    const unbundled = spawnSync(process.execPath, [MAIN, ...listing], { cwd: SAMPLE, encoding: "utf8" });
    assert.equal(text.stdout, unbundled.stdout);
  });

  test("on a Node that cannot require an ES module (before 20.19), the bundle's decodes run", {
    skip:
      !process.allowedNodeEnvironmentFlags.has("--no-experimental-require-module") &&
      "this Node cannot switch require(esm) off",
  }, () => {
    // The demangler's glue is such a module: required at start-up, it stopped every
    // command of the bundle (flow, perf, latency) there; now when a name needs it.
    const args = [
      "flow",
      "--quiet",
      "--elf",
      "sample.elf",
      "--pt",
      "sample.pt",
      "--afl-map",
      join(dir, "old.bin"),
    ];
    const r = spawnSync(process.execPath, ["--no-experimental-require-module", BIN, ...args], {
      cwd: SAMPLE,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, "");
  });

  test("on a Node without process.getBuiltinModule (before 20.16), instruction text still loads iced-x86", () => {
    const listing = ["flow", "--elf", "sample.elf", "--pt", "sample.pt:0-0x100"];
    for (const bin of [BIN, MAIN]) {
      const script = `delete process.getBuiltinModule;
process.argv = [process.argv[0], ${JSON.stringify(bin)}, ...${JSON.stringify(listing)}];
await import(${JSON.stringify(pathToFileURL(bin).href)});`;
      const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        cwd: SAMPLE,
        encoding: "utf8",
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^00000000004000e8 {2}xor ebp, ebp$/m, bin);
    }
  });

  describe("-j 2: the decoding threads start from the bundle", () => {
    // Pieces of 2 KiB: the sample (19 KiB, 10 PSBs) is cut into several.
    const env = { PTKIT_CHUNK_SIZE: "2048" };
    const threaded = (...args: string[]): Loaded => {
      const r = runLogged([BIN, ...args], SAMPLE, { ...env, PTKIT_WORKERS_ONLY: "1" });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, "");
      const workers = bundleFiles(r).filter((f) => f === "chunk-worker.js");
      assert.ok(workers.length >= 1, "no thread loaded the bundle's chunk-worker.js");
      return r;
    };
    const single = (...args: string[]) => runLogged([BIN, ...args], SAMPLE, env);

    test("stats", () => {
      const r = threaded("stats", "-j", "2", "sample.pt");
      assert.equal(untimed(r.stdout), untimed(single("stats", "-j", "1", "sample.pt").stdout));
    });
    test("dump", () => {
      const r = threaded("dump", "-j", "2", "sample.pt");
      assert.match(r.stdout, /^[\da-f]{16} {2}psb$/m);
      assert.equal(r.stdout, single("dump", "-j", "1", "sample.pt").stdout);
      assert.equal(threaded("dump", "-j", "2", "--quiet", "sample.pt").stdout, "");
    });
    test("flow --quiet", () => {
      const args = [
        "flow",
        "-j",
        "2",
        "--block-decoder",
        "--quiet",
        "--elf",
        "sample.elf",
        "--pt",
        "sample.pt",
      ];
      // This thread decodes pieces too, all of them when it is done before a worker starts.
      const both = runLogged([BIN, ...args], SAMPLE, env);
      assert.equal(both.status, 0, both.stderr);
      assert.equal(both.stderr, "");
      // Every piece on a worker: the workers load the flow from the bundle.
      threaded(...args);
    });
  });
});

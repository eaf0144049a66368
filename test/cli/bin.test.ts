/** The installed `ptkit` executable, end to end in a child process. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { corpusPath, REPO_ROOT, skipUnlessCorpus } from "../corpus.js";

/** The executable of this build (dist*\/src/cli/main.js beside dist*\/test/). */
const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "src", "cli", "main.js");
const ptkit = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8" });

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
  // build re-emits main.js, which must get its run bit back.
  const mode = statSync(BIN).mode;
  assert.equal(mode & 0o111, 0o111, `mode ${(mode & 0o777).toString(8)}`);
  const r = spawnSync(BIN, ["--version"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^ptkit \d/);
});

test("ptkit without arguments prints the usage and fails", () => {
  const r = ptkit();
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^usage: ptkit <command> \[<options>\]\n/);
});

test("npm start runs ptkit demo, which decodes the bundled sample from any directory", () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  assert.equal(pkg.scripts.start, "node dist/src/cli/main.js demo");
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

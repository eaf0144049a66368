/** The installed `ptkit` executable, end to end in a child process. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { corpusPath, REPO_ROOT, skipUnlessCorpus } from "../corpus.js";

const BIN = join(REPO_ROOT, "dist", "src", "cli", "main.js");
const ptkit = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8" });

test("ptkit --help lists the commands; unknown commands fail", () => {
  const help = ptkit("--help");
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^ {2}dump /m);
  assert.match(help.stdout, /^ {2}stats /m);
  const bad = ptkit("frobnicate");
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /unknown command 'frobnicate'/);
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

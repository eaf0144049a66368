/**
 * The build-id cache with real files: a HASE capture whose program is renamed to a
 * path inside this test's temporary directory that is never created (the recorded
 * path may exist on the machine running the test), its build_id feature given an
 * entry for it, and a
 * cache tree holding the corpus binary in each layout perf has used
 * (~/.debug/.build-id/xx/rest → ../../<path>/<id> holding `elf`, or being the file;
 * ~/.debug/<path>/<id>/elf alone): `ptkit perf` finds it there and prints exactly
 * perf script's instructions.
 */
import assert from "node:assert/strict";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { concat } from "../../tools/perf/perf-data-writer.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { buildIdFeature } from "./pt-file.js";
import { renameBinary, rewriteFile } from "./rewrite.js";

const HASE = "real/hase";
const PERF = ["2018-04-04", "control_flow", "control_flow-20180404T163033.perf"];
const BINARY = ["2018-04-04", "control_flow", "control_flow"];
/** The program's path as the capture recorded it: renamed, since it may exist on this machine. */
const CAPTURED = "/home/joerg/git/angr/hase/tests/bin/control_flow/control_flow";
const ID = "c0ffee00112233445566778899aabbccddeeff01";
const skip = skipUnlessCorpus(HASE, ...PERF);
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-buildid-"));
after(() => rmSync(dir, { recursive: true, force: true }));
/** Where the rewritten file says the program was: inside this test's own directory, never created. */
const RECORDED = join(dir, "not-here", "control_flow");

function perfScriptInsns(): string[] {
  return readFileSync(corpusPath(HASE, "reference", "control_flow-20180404.perf-script-insn.txt")!, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => BigInt(`0x${l.trim()}`).toString(16).padStart(16, "0"));
}

function run(home: string, args: string[] = []): { ips: string[]; err: string } {
  const io = captureIo(dir);
  assert.equal(runPerf([...args, "perf.data"], io, home), 0);
  const out = io.out.join("");
  return { ips: out.split("\n").filter((l) => /^[0-9a-f]{16}$/.test(l)), err: io.err.join("") };
}

test("ptkit perf finds binaries in the build-id cache by the file's build ids", { skip }, () => {
  const file = new Uint8Array(readFileSync(corpusPath(HASE, ...PERF)!));
  writeFileSync(
    join(dir, "perf.data"),
    rewriteFile(renameBinary(file, CAPTURED, RECORDED), {
      feature: (bit, body) => (bit === 2 ? concat([body, buildIdFeature([[-1, RECORDED, ID]])]) : body),
    }),
  );
  const binary = corpusPath(HASE, ...BINARY)!;
  const want = perfScriptInsns();
  const link = (debug: string) => {
    const at = join(debug, ".build-id", ID.slice(0, 2), ID.slice(2));
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(join("..", "..", RECORDED, ID), at);
  };
  const layouts: Record<string, (debug: string) => void> = {
    "link to a directory holding elf": (debug) => {
      mkdirSync(join(debug, RECORDED, ID), { recursive: true });
      copyFileSync(binary, join(debug, RECORDED, ID, "elf"));
      link(debug);
    },
    "link to the file (older perf)": (debug) => {
      mkdirSync(join(debug, RECORDED), { recursive: true });
      copyFileSync(binary, join(debug, RECORDED, ID));
      link(debug);
    },
    "<path>/<build-id>/elf alone": (debug) => {
      mkdirSync(join(debug, RECORDED, ID), { recursive: true });
      copyFileSync(binary, join(debug, RECORDED, ID, "elf"));
    },
  };
  for (const [name, make] of Object.entries(layouts)) {
    const home = join(dir, name.replace(/\W+/g, "-"));
    make(join(home, ".debug"));
    const r = run(home);
    assert.equal(r.err, "", name);
    assert.deepEqual(r.ips, want, name);
  }
  // --buildid-dir names the cache instead of ~/.debug.
  const elsewhere = run(join(dir, "unused-home"), [
    "--buildid-dir",
    join(dir, "link-to-the-file-older-perf-", ".debug"),
  ]);
  assert.deepEqual(elsewhere.ips, want);
  // Without the cache: the binary is reported missing, with its build id.
  const none = run(join(dir, "empty-home"));
  assert.deepEqual(none.ips, []);
  assert.ok(none.err.includes(`no binary for ${RECORDED} (build id ${ID})`), none.err);
});

/**
 * A directory (or a file that cannot be read) where a command wants a file: every
 * command says so in one line naming it and fails, with the real process's file
 * access (src/node/io.ts), never an internal error with a stack trace.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { nodeIo } from "../../src/node/io.js";
import type { SessionIo } from "../../src/session/io.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { sampleFile } from "../perf/sample-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-not-a-file-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const at = (name: string) => join(dir, name);

const DIR = at("a-directory");
mkdirSync(DIR);
const TRACE = at("trace.pt");
// PSB, PSBEND: a trace that syncs.
writeFileSync(TRACE, Uint8Array.from([...Array(8).fill([2, 0x82]).flat(), 2, 0x23]));
const PERF = at("perf.data");
writeFileSync(PERF, fileMode(sampleFile()));
const FILE = at("a-file");
writeFileSync(FILE, "");
const RUN = at("run.jsonl");
writeFileSync(
  RUN,
  `${[
    { k: "cpl", cpl: 3 },
    { k: "insn", ip: "0x401000", size: 2, class: "other" },
    { k: "end", ip: "0x401002" },
  ]
    .map((o) => JSON.stringify(o))
    .join("\n")}\n`,
);

/** Run ptkit in-process on the real file system, with its output captured. */
async function ptkit(
  argv: string[],
  io: Partial<SessionIo> = {},
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    ...nodeIo(),
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    ...io,
  });
  return { code, out: out.join(""), err: err.join("") };
}

/** One line on stderr naming `path` and saying why, a failing exit code, no stack trace. */
function assertOneLine(r: { code: number; err: string }, path: string, why: RegExp, what: string): void {
  assert.notEqual(r.code, 0, what);
  assert.notEqual(r.code, 70, `${what}: an internal error`);
  assert.match(r.err, /^ptkit [a-z-]+: [^\n]+\n$/, `${what}: ${r.err}`);
  assert.ok(r.err.includes(path), `${what} names ${path}: ${r.err}`);
  assert.match(r.err, why, what);
}

describe("a directory where a file is wanted", () => {
  const inputs: string[][] = [
    ["dump", DIR],
    ["stats", DIR],
    ["flow", "--pt", DIR],
    ["flow", "--elf", DIR, "--pt", TRACE],
    ["flow", "--raw", `${DIR}:0x1000`, "--pt", TRACE],
    ["flow", "--pevent:primary", DIR, "--pt", TRACE],
    ["dump", "--pevent:primary", DIR, TRACE],
    ["perf", DIR],
    ["perf-dump", DIR],
    ["perf", "--elf", DIR, PERF],
    ["perf", "--vmlinux", DIR, PERF],
    ["perf", "--kcore", DIR, PERF],
    ["simulate", "-o", at("out.pt"), DIR],
    ["symbols", DIR, "0x1000"],
  ];
  for (const argv of inputs) {
    test(`to read: ptkit ${argv.join(" ").replaceAll(dir, "$TMP")}`, async () => {
      assertOneLine(await ptkit(argv), DIR, /it is a directory/, argv.join(" "));
    });
  }

  const outputs: string[][] = [
    ["simulate", "-o", DIR, RUN],
    ["perf", "-q", "--timeline", DIR, PERF],
    ["flow", "--raw", `${TRACE}:0x1000`, "--pt", TRACE, "--folded", DIR],
  ];
  for (const argv of outputs) {
    test(`to write: ptkit ${argv.join(" ").replaceAll(dir, "$TMP")}`, async () => {
      assertOneLine(await ptkit(argv), DIR, /it is a directory/, argv.join(" "));
    });
  }

  test("perf-dump --aux naming a file", async () => {
    const r = await ptkit(["perf-dump", "--aux", FILE, PERF]);
    assertOneLine(r, FILE, /--aux .*cannot make the directory: a file of that name exists/, "--aux");
    assert.equal(r.out, "", "nothing listed before the error");
  });
});

test("a file that cannot be read: permission denied, named", async () => {
  const denied = (path: string): never => {
    const e: NodeJS.ErrnoException = new Error(`EACCES: permission denied, open '${path}'`);
    e.code = "EACCES";
    throw e;
  };
  for (const command of ["perf", "perf-dump"]) {
    const r = await ptkit([command, PERF], { fileSize: denied, readRange: denied, readFile: denied });
    assertOneLine(r, PERF, /permission denied/, command);
  }
});

/**
 * ELF files as the commands read them (session/elf-files.ts): a large one in part,
 * through the Node adapter (ranges read into place) and the in-memory one of the
 * browser (ranges copied): `flow --elf`'s code file has its segments' bytes and its
 * symbols and not its DWARF; a small one is read whole.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { SymbolTable } from "../../src/analysis/index.js";
import { nodeIo } from "../../src/node/io.js";
import { bytesSource } from "../../src/perf/index.js";
import { FilesIo } from "../../src/session/files-io.js";
import { readCodeFile } from "../../src/session/flow-image.js";
import type { SessionIo } from "../../src/session/io.js";
import { madeElf } from "../image/made-elf.js";

function checkCodeFile(io: SessionIo, name: string, bytes: Uint8Array, large: boolean): void {
  const elf = readCodeFile(io, { name, base: undefined });
  assert.ok(typeof elf !== "string", String(elf));
  for (const g of elf.loads)
    assert.equal(
      Buffer.compare(
        elf.bytes.subarray(g.offset, g.offset + g.filesz),
        bytes.subarray(g.offset, g.offset + g.filesz),
      ),
      0,
    );
  const dwarf = elf.sections.find((s) => s.name === ".debug_info")!;
  const zeros = elf.bytes.subarray(dwarf.offset, dwarf.offset + dwarf.size).every((b) => b === 0);
  assert.equal(zeros, large, large ? "DWARF not read" : "a small file read whole");
  const table = new SymbolTable(elf);
  assert.deepEqual(
    Array.from({ length: table.size }, (_, k) => table.symbolName(k)),
    ["main", "work", "helper"],
  );
}

test("flow's code files: a large one without its DWARF, a small one whole, through either adapter", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-elf-files-"));
  try {
    for (const [big, large] of [
      [2_000_000, true],
      [100_000, false],
    ] as const) {
      const bytes = madeElf("section", big);
      writeFileSync(join(dir, "prog"), bytes);
      checkCodeFile(nodeIo(dir), "prog", bytes, large);
      const files = new FilesIo();
      files.add("prog", bytesSource(bytes));
      checkCodeFile(files, "prog", bytes, large);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

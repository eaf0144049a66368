/**
 * `ptkit perf --kernel FILE` (and `--kcore`'s kcore): a core file's segments mapped as
 * they were read, a vmlinux's code segments as [kernel.kallsyms], an unreadable or
 * non-ELF file said so.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Image } from "../../src/image/index.js";
import { bytesSource } from "../../src/perf/index.js";
import { FilesIo } from "../../src/session/files-io.js";
import { loadKernel } from "../../src/session/perf-kernel.js";
import { ET_EXEC, PF_R, PF_X, pattern, writeElf } from "../../tools/elf/elf-writer.js";

const KERNEL = 0xffffffff81000000n;
const ET_CORE = 4;

/** The bytes `image` holds at kernel address `addr`, `n` of them (fewer where it has none). */
function at(image: Image, addr: bigint, n: number): Uint8Array {
  const out = new Uint8Array(n);
  const got = image.read(Number(addr >> 32n), Number(addr & 0xffffffffn), out, n);
  return out.subarray(0, Math.max(0, got));
}

test("a core file's segments and a vmlinux's code segments are mapped; a missing or non-ELF file is an error", () => {
  const code = pattern(8192, 5);
  const io = new FilesIo();
  for (const [name, type] of [
    ["kcore", ET_CORE],
    ["vmlinux", ET_EXEC],
  ] as const) {
    io.add(
      name,
      bytesSource(
        writeElf({
          is64: true,
          le: true,
          type,
          segments: [{ vaddr: KERNEL, flags: PF_R | PF_X, data: code }],
        }).bytes,
      ),
    );
    const image = new Image();
    const warnings: string[] = [];
    const load = loadKernel(io, image, name, undefined, (w) => warnings.push(w));
    assert.equal(load.error, undefined, name);
    assert.deepEqual(warnings, [], name);
    assert.deepEqual(at(image, KERNEL, 8192), code, name);
    assert.deepEqual(at(image, KERNEL + 8192n, 16), new Uint8Array(0), `${name}: nothing past the segment`);
  }
  assert.match(loadKernel(io, new Image(), "none", undefined, () => {}).error!, /^failed to open none: /);
  io.add("text", bytesSource(new TextEncoder().encode("this text is not an ELF file")));
  assert.match(loadKernel(io, new Image(), "text", undefined, () => {}).error!, /^text: .*not an ELF file/);
});

/**
 * iced-x86 (the formatter's WebAssembly) is loaded on the first format, not on import
 * and not by decoding (decodeInsn is table-driven): synchronously where Node has
 * process.getBuiltinModule, else (browsers, Node before 20.16) by `await initIsa()`.
 * Each case runs in a child process, since a process loads iced once.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

const ISA = new URL("../../src/isa/index.js", import.meta.url).href;

/** Run ES module `code` (with `isa` imported) in a child Node; `bare`: without process.getBuiltinModule. */
function run(code: string, bare: boolean) {
  const args = bare ? ["--import", "data:text/javascript,delete process.getBuiltinModule"] : [];
  const script = `import * as isa from ${JSON.stringify(ISA)};\n${code}`;
  return spawnSync(process.execPath, [...args, "--input-type=module", "-e", script], { encoding: "utf8" });
}

const DECODE_NOP = "isa.decodeInsn(new Uint8Array([0x90]), 0, 0, 0, isa.ExecMode.Bits64, new isa.InsnInfo())";
const FORMAT_NOP = "isa.formatInsn(new Uint8Array([0x90]), 0, 0, 0, isa.ExecMode.Bits64)";

test("on Node, decoding loads no iced-x86, and the first format loads it by itself", () => {
  const r = run(
    `console.log(${DECODE_NOP}, isa.isIcedLoaded());
console.log(${FORMAT_NOP}, isa.isIcedLoaded());`,
    false,
  );
  assert.equal(r.stderr, "");
  assert.equal(r.stdout, "1 false\nnop true\n");
});

test("without a synchronous loader, decoding works, formatting asks for initIsa(), and works after it", () => {
  const r = run(
    `console.log(${DECODE_NOP});
try { console.log(${FORMAT_NOP}); } catch (e) { console.log(e.message); }
await isa.initIsa();
console.log(isa.isIcedLoaded(), ${FORMAT_NOP});`,
    true,
  );
  assert.equal(r.stderr, "");
  assert.equal(
    r.stdout,
    "1\nptkit/isa: iced-x86 is not loaded: await initIsa() before formatting instructions\ntrue nop\n",
  );
});

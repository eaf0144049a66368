/**
 * The Event Trace events of event-cases.ts decoded by Debian's libipt 2.0.5, which
 * predates Event Trace (the harness skips CFE and EVD): the rest of each trace (the
 * FUP/TIP.PGD at SMI and INIT, the TIP.PGE at RSM and SIPI, the FUP/TIP of software
 * and user interrupts) must give back exactly the traced instructions.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { caps, ET, INIT, NOP, SMI, softInt, UINTR, vmExit } from "./event-cases.js";
import { genBytes } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-etev-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

/** Decode `exec`'s trace with libipt over the given code regions; the instruction IPs. */
function libipt(tag: string, exec: string, regions: [string, number[]][]): string[] {
  const trace = join(dir, `${tag}.pt`);
  writeFileSync(trace, genBytes(exec, { ctl: ET, caps }));
  const files = regions.map(([at, bytes], n) => {
    const f = join(dir, `${tag}-${n}.bin`);
    writeFileSync(f, Uint8Array.from(bytes));
    return `${f}:${at}`;
  });
  const out = runInsnDecoder(bin, trace, files, undefined, ["--skip-event-trace"]);
  assert.ok(Array.isArray(out), JSON.stringify(out));
  assert.deepEqual(
    out.filter((l) => l.startsWith("E ") || l.startsWith("X ")),
    [],
  );
  return out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!);
}

describe("Event Trace events decode with libipt 2.0.5", { skip }, () => {
  test("INT 0x80 and its IRET", () => {
    const ips = libipt("int", softInt(2, 0x80), [
      ["0x1000", [NOP, 0xcd, 0x80, NOP]],
      ["0xffffffff81000000", [0x66, NOP, 0x48, 0xcf]],
    ]);
    assert.deepEqual(ips.slice(-3), ["0xffffffff81000000", "0xffffffff81000002", "0x1003"]);
  });
  test("SMI and RSM: the code before and after, not SMM's", () => {
    const ips = libipt("smi", SMI, [
      ["0x1000", [NOP, NOP]],
      ["0x38000", [NOP, 0x0f, 0xaa]],
    ]);
    assert.deepEqual(ips, ["0x1000", "0x1001"]);
  });
  test("INIT and SIPI: the code before and the code the SIPI starts", () => {
    const ips = libipt("init", INIT, [
      ["0x1000", [NOP, NOP]],
      ["0xce000", [NOP, NOP]],
    ]);
    assert.deepEqual(ips, ["0x1000", "0xce000"]);
  });
  test("VM exit with its qualification", () => {
    const ips = libipt("vmexit", vmExit(true), [
      ["0x1000", [NOP, NOP]],
      ["0xffffffff81000000", [NOP, NOP]],
    ]);
    assert.deepEqual(ips, ["0x1000", "0xffffffff81000000"]);
  });
  test("UINTR and UIRET", () => {
    const ips = libipt("uintr", UINTR, [
      ["0x1000", [NOP, NOP]],
      ["0x2000", [NOP, 0xf3, 0x0f, 0x01, 0xec]],
    ]);
    assert.deepEqual(ips, ["0x1000", "0x2000", "0x2001", "0x1001"]);
  });
});

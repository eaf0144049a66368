/**
 * A small program and its trace for the call-stack and export tests: nested calls with
 * compressed returns, a not-taken conditional branch, an interrupt with its IRET, a
 * return into a caller the trace never saw called, an overflow inside two calls, and
 * tracing switched off at the end; a TSC update between the parts.
 *
 * ```
 * main:  call f          f:     nop          h:     nop            outer: call g
 * m1:    call g                 call g              iret           o1:    nop
 * m2:    jz m4                  ret                                o2:    call deep
 * m3:    nop             g:     add          deep:  call g         o3:    nop
 * m4:    ret                    ret                 ret            o4:    hlt
 * ```
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FlowTracker } from "../../src/analysis/index.js";
import { defaultDecoderConfig } from "../../src/event/index.js";
import { drive, Insn, InsnDecoder } from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";
import { errorMessage } from "../../src/packet/index.js";
import { Trace } from "../event/helpers.js";
import { Asm } from "../flow/asm.js";

export const BASE = 0x401000n;

export function callProgram(): { asm: Asm; code: Uint8Array; trace: Uint8Array } {
  const a = new Asm(BASE);
  a.label("main").call("f").label("m1").call("g").label("m2").jz("m4").label("m3").nop().label("m4").ret();
  a.label("f").nop().call("g").ret();
  a.label("g").add().ret();
  a.label("h").nop().iret();
  a.label("deep").call("g").ret();
  a.label("outer").call("g").label("o1").nop().label("o2").call("deep").label("o3").nop().label("o4").hlt();
  const code = a.build();
  const t = new Trace().psb().tsc(0x100000n).mode(64).fup(a.at("main")).psbend();
  // g and f return; main's call to g returns and jz is not taken.
  t.tnt("!!").tsc(0x100400n).tnt("!.");
  // An interrupt at m3 to h, IRET back.
  t.fup(a.at("m3")).tip(a.at("h")).tip(a.at("m3"));
  // main returns to a caller never seen called.
  t.tsc(0x100800n).tip(a.at("outer"));
  // outer calls g; the trace overflows after g's return bit (an event without an IP binds
  // at once, so the return never completes: g and outer end in the gap). It resumes at o3.
  t.tnt("!").tsc(0x100c00n).ovf();
  // IP compression restarts after an overflow.
  t.enc.last.reset();
  t.fup(a.at("o3"));
  // Tracing stops at o4.
  t.tsc(0x101000n).fup(a.at("o4")).pgd();
  return { asm: a, code, trace: t.bytes() };
}

/**
 * Decode `trace` against `image` as ptxed's loop does (tick events on, so times follow
 * the TSC updates) and feed every instruction, event and error to `feed`.
 */
export function feedTrace(trace: Uint8Array, image: Image, feed: FlowTracker): void {
  const config = { ...defaultDecoderConfig(), enableTickEvents: true };
  drive(new InsnDecoder(trace, { image, config }), new Insn(), {
    record: (insn) => feed.insnRecord(insn),
    event: (ev) => feed.event(ev),
    error: (status, offset) => feed.error(offset, errorMessage(status)),
  });
}

/** Where golden files live (the repository's, from the compiled test). */
export const GOLDEN_DIR = fileURLToPath(new URL("../../../test/fixtures/golden/", import.meta.url));

/**
 * Compare `actual` with golden file `name`; with PTKIT_UPDATE_GOLDEN=1 write it instead.
 * Returns the golden text.
 */
export function golden(name: string, actual: string): string {
  const path = join(GOLDEN_DIR, name);
  if (process.env.PTKIT_UPDATE_GOLDEN === "1") {
    mkdirSync(GOLDEN_DIR, { recursive: true });
    writeFileSync(path, actual);
  }
  return readFileSync(path, "utf8");
}

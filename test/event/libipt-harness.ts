/**
 * Builds and runs evt-harness.c (beside this file in the source tree) against libipt's
 * event decoder, compiled from a libipt source tree at the corpus commit 8978561f:
 * `$PTKIT_LIBIPT_SRC`, else /tmp/libipt. Debian's libipt predates the event decoder,
 * so without that source tree the differential test skips, saying so.
 *
 * {@link libiptTranscripts} and {@link ptkitTranscript} produce the same text for the
 * same case, which the test compares.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCode, errorMessage } from "../../src/base/errors.js";
import { ERRATA_NAMES } from "../../src/cpu/errata.js";
import type { DecoderConfig } from "../../src/event/config.js";
import { EventDecoder } from "../../src/event/decoder.js";
import { PtEvent } from "../../src/event/types.js";
import { concatBytes } from "../../src/perf/bytes.js";
import { describe } from "./helpers.js";

const HARNESS = fileURLToPath(new URL("../../../test/event/evt-harness.c", import.meta.url));
const SOURCE_ROOT = process.env.PTKIT_LIBIPT_SRC ?? "/tmp/libipt";
const LIBIPT_SOURCES = [
  "pt_event_decoder.c",
  "pt_event_queue.c",
  "pt_packet_decoder.c",
  "pt_packet.c",
  "pt_last_ip.c",
  "pt_time.c",
  "pt_config.c",
  "pt_sync.c",
  "pt_error.c",
];

export type Mode = "forward" | "backward" | "set";

export interface Case {
  bytes: Uint8Array;
  config: DecoderConfig;
  mode: Mode;
}

/** The compiled harness, or why there is none. */
export function buildEventHarness(): { bin: string } | { skip: string } {
  const lib = join(SOURCE_ROOT, "libipt");
  const header = join(lib, "include", "intel-pt.h.in");
  if (
    !existsSync(join(lib, "src", "pt_event_decoder.c")) ||
    !existsSync(header) ||
    !existsSync(join(SOURCE_ROOT, "CMakeLists.txt"))
  ) {
    return { skip: `no libipt source tree with the event decoder at ${SOURCE_ROOT} (set PTKIT_LIBIPT_SRC)` };
  }
  const cc = process.env.CC || "cc";
  const probe = spawnSync(cc, ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) return { skip: `no C compiler (${cc}) on PATH` };

  const sources = LIBIPT_SOURCES.map((f) => join(lib, "src", f));
  const hash = createHash("sha256");
  for (const f of [HARNESS, header, ...sources]) hash.update(readFileSync(f));
  const dir = join(tmpdir(), `ptkit-evt-harness-${hash.digest("hex").slice(0, 16)}`);
  const bin = join(dir, "evt-harness");
  if (existsSync(bin)) return { bin };

  // libipt's build generates intel-pt.h from its template, filling in the version
  // from CMakeLists.txt (declarations are guarded by it).
  const cmake = readFileSync(join(SOURCE_ROOT, "CMakeLists.txt"), "utf8");
  const version = (part: string) => new RegExp(`set\\(PT_VERSION_${part} (\\d+)\\)`).exec(cmake)?.[1] ?? "0";
  mkdirSync(join(dir, "include"), { recursive: true });
  const text = readFileSync(header, "utf8").replace(
    /\$\{PT_VERSION_(MAJOR|MINOR|PATCH)\}/g,
    (_, part: string) => version(part),
  );
  writeFileSync(join(dir, "include", "intel-pt.h"), text);
  const includes = [join(dir, "include"), join(lib, "internal", "include"), join(SOURCE_ROOT, "include")];
  const tmp = `${bin}.${process.pid}.tmp`;
  const args = ["-O1", "-o", tmp, HARNESS, ...sources, ...includes.map((i) => `-I${i}`)];
  const r = spawnSync(cc, args, { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(`${cc} ${args.join(" ")} failed:\n${r.stderr || r.error}`);
  }
  renameSync(tmp, bin);
  return { bin };
}

function errataBits(config: DecoderConfig): number {
  let bits = 0;
  ERRATA_NAMES.forEach((name, i) => {
    if (config.errata[name]) bits |= 1 << i;
  });
  return bits;
}

/** Run every case through libipt in one process; one transcript per case. */
export function libiptTranscripts(bin: string, cases: readonly Case[]): string[] {
  const parts: Uint8Array[] = [];
  for (const c of cases) {
    const k = c.config;
    const flags = (k.enableIflagsEvents ? 1 : 0) | (k.keepTcalOnOvf ? 2 : 0);
    const head = [
      errataBits(k),
      k.mtcFreq,
      k.nomFreq,
      k.cpuid15Eax,
      k.cpuid15Ebx,
      flags,
      c.mode,
      c.bytes.length,
    ];
    parts.push(new TextEncoder().encode(`${head.join(" ")}\n`), c.bytes);
  }
  const input = concatBytes(parts);
  const r = spawnSync(bin, [], { input, encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error || r.status !== 0) throw new Error(`${bin} failed (${r.status}): ${r.stderr || r.error}`);
  const out = r.stdout.split("--\n");
  out.pop();
  return out;
}

const NO_OFFSET = "18446744073709551615";

function line(ev: PtEvent): string {
  return `${describe(ev)} {${ev.hasTsc ? 1 : 0} ${ev.tsc.toString(16)} ${ev.lostMtc} ${ev.lostCyc}}\n`;
}

function someEvents(dec: EventDecoder, ev: PtEvent): string {
  let out = "";
  for (let i = 0; i < 3; i++) {
    const status = dec.next(ev);
    if (status < 0) return `${out}error ${errorMessage(status)}\n`;
    out += line(ev);
  }
  return out;
}

/** ptkit's transcript of a case, in the harness's format. */
export function ptkitTranscript(c: Case): string {
  const dec = new EventDecoder(c.bytes, c.config);
  const ev = new PtEvent();
  let out = "";
  if (c.mode === "backward") {
    for (let round = 0; round < 50; round++) {
      const status = dec.syncBackward();
      if (status < 0) {
        out += `back ${errorMessage(status)}\n`;
        if (status === -ErrorCode.Eos || status === -ErrorCode.NoSync) break;
        continue;
      }
      const offset = dec.offset < 0 ? NO_OFFSET : dec.offset;
      out += `back sync=${dec.syncOffset} off=${offset}\n${someEvents(dec, ev)}`;
    }
    return out;
  }
  if (c.mode === "set") {
    for (let offset = 0; offset < c.bytes.length; offset++) {
      if (dec.syncSet(offset) < 0) continue;
      out += `set ${offset}\n${someEvents(dec, ev)}`;
    }
    return out;
  }
  let status = dec.syncForward();
  for (let events = 0; events < 1_000_000; events++) {
    if (status < 0) {
      if (status === -ErrorCode.Eos) return `${out}eos\n`;
      out += `error ${errorMessage(status)} @${dec.offset < 0 ? NO_OFFSET : dec.offset}\n`;
      status = dec.syncForward();
      if (status < 0) return `${out}sync ${errorMessage(status)}\n`;
      continue;
    }
    status = dec.next(ev);
    if (status >= 0) out += line(ev);
  }
  return `${out}limit\n`;
}

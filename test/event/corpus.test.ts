/**
 * Every trace of libipt's conformance suite (corpus/ptt) decoded to the end with the
 * errata of each CPU its manifest lists (and with none), resynchronising after
 * errors: nothing throws and every event is well-formed; where libipt's ptxed reported
 * no error, neither does the event decoder.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { cpuErrata, noErrata, parseCpu } from "../../src/cpu/errata.js";
import type { DecoderConfig } from "../../src/event/config.js";
import { EventDecoder } from "../../src/event/decoder.js";
import { EventType, PtEvent } from "../../src/event/types.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { config } from "./helpers.js";

interface Manifest {
  cpus?: Array<string | null>;
  ptt_opts?: { ptxed?: string[] };
}

const root = corpusPath("ptt");
const names = root ? readdirSync(root).filter((n) => existsSync(join(root, n, `${n}.pt`))) : [];

function optionValue(opts: string[], name: string): number {
  const i = opts.indexOf(name);
  return i >= 0 ? Number(opts[i + 1]) : 0;
}

/** The decoder configuration of a manifest's ptxed options and a CPU ("f/m", or null for none). */
function configFor(opts: string[], cpu: string | null): DecoderConfig {
  const cfg = config({
    mtcFreq: optionValue(opts, "--mtc-freq"),
    nomFreq: optionValue(opts, "--nom-freq"),
    cpuid15Eax: optionValue(opts, "--cpuid-0x15.eax"),
    cpuid15Ebx: optionValue(opts, "--cpuid-0x15.ebx"),
    enableIflagsEvents: opts.includes("--event:iflags"),
    keepTcalOnOvf: opts.some((o) => o.endsWith("keep-tcal-on-ovf")),
  });
  const parsed = cpu === null ? undefined : parseCpu(cpu);
  cfg.errata = (parsed && cpuErrata(parsed)) ?? noErrata();
  return cfg;
}

test("ptt corpus: every trace decodes to the end with every manifest CPU", {
  skip: skipUnlessCorpus("ptt"),
}, () => {
  assert.ok(names.length > 150, `only ${names.length} traces found`);
  let runs = 0;
  let events = 0;
  for (const name of names) {
    const dir = join(root!, name);
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    const bytes = new Uint8Array(readFileSync(join(dir, `${name}.pt`)));
    const opts = manifest.ptt_opts?.ptxed ?? [];
    for (const cpu of [...(manifest.cpus ?? []).filter((c): c is string => !!c), null]) {
      const cfg = configFor(opts, cpu);
      events += decodeToEnd(bytes, new EventDecoder(bytes, cfg), `${name} cpu ${cpu ?? "none"}`);
      runs += 1;
    }
  }
  assert.ok(runs > names.length);
  assert.ok(events > 1000, `only ${events} events`);
});

/** Decode with resynchronisation until the end; returns the number of events. */
function decodeToEnd(bytes: Uint8Array, dec: EventDecoder, what: string): number {
  const ev = new PtEvent();
  let count = 0;
  let status = dec.syncForward();
  for (let guard = 0; guard < 16 * (bytes.length + 1); guard++) {
    if (status === -ErrorCode.Eos) return count;
    if (status < 0) {
      assert.ok(dec.offset <= bytes.length, `${what}: error offset ${dec.offset}`);
      status = dec.syncForward();
      continue;
    }
    status = dec.next(ev);
    if (status === 0) {
      count += 1;
      assert.ok(
        ev.type >= 0 && ev.type <= EventType.Syscall && ev.type !== EventType.Tick,
        `${what}: type ${ev.type}`,
      );
    }
  }
  assert.fail(`${what}: decoding did not end`);
}

test("ptt corpus: where ptxed reports no error, the events decode without error", {
  skip: skipUnlessCorpus("ptt"),
}, () => {
  let checked = 0;
  for (const name of names) {
    const dir = join(root!, name);
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    const bytes = new Uint8Array(readFileSync(join(dir, `${name}.pt`)));
    for (const exp of readdirSync(dir).filter((f) => /-ptxed(-cpu_\d+_\d+)?\.exp$/.test(f))) {
      if (readFileSync(join(dir, exp), "utf8").includes(": error: ")) continue;
      const cpu = /-cpu_(\d+)_(\d+)\.exp$/.exec(exp);
      const cfg = configFor(manifest.ptt_opts?.ptxed ?? [], cpu ? `${cpu[1]}/${cpu[2]}` : null);
      const dec = new EventDecoder(bytes, cfg);
      if (dec.syncForward() < 0) continue;
      const ev = new PtEvent();
      let status = 0;
      while (status === 0) status = dec.next(ev);
      assert.equal(status, -ErrorCode.Eos, `${exp}: ${status} at ${dec.offset}`);
      checked += 1;
    }
  }
  assert.ok(checked > 100, `only ${checked} error-free ptxed runs`);
});

/**
 * `ptkit simulate` against real hardware: HASE's `loopy` (static, non-PIE) run
 * under valgrind with each capture's settings (perf `intel_pt//u`: User only, TSC;
 * Skylake also MTC) and the capture's CPU preset. The model's packet stream must show
 * the capture's IP compressions per packet kind (FUP, TIP, TIP.PGE) and its PSB+
 * order, for the kinds both have: what the CPU profiles (src/unit/profiles.ts) claim.
 * The streams differ otherwise (perf's context switches, the stand-in kernel).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { main } from "../../src/cli/ptkit.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { Packet, PacketType } from "../../src/packet/types.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";

const LOOPY = ["real", "hase", "2018-04-04", "loopy", "loopy"];
const CAPTURES = [
  { preset: "skylake", ref: "loopy-20180404-aux-idx2", options: ["--user", "--tsc", "--mtc", "3"] },
  { preset: "broadwell", ref: "loopy-20180514-aux-idx1", options: ["--user", "--tsc"] },
] as const;

const NAMES: Partial<Record<number, string>> = {
  [PacketType.Psb]: "psb",
  [PacketType.PsbEnd]: "psbend",
  [PacketType.Fup]: "fup",
  [PacketType.Tip]: "tip",
  [PacketType.TipPge]: "tip.pge",
  [PacketType.TipPgd]: "tip.pgd",
  [PacketType.ModeExec]: "mode.exec",
  [PacketType.ModeTsx]: "mode.tsx",
  [PacketType.Pip]: "pip",
  [PacketType.Tsc]: "tsc",
  [PacketType.Tma]: "tma",
  [PacketType.Cbr]: "cbr",
};

/** Packets as "kind" or "kind ipc=N" (IP packets with an IP). */
function modelPackets(bytes: Uint8Array): string[] {
  const d = new PacketDecoder(bytes);
  const p = new Packet();
  const out: string[] = [];
  if (d.syncForward() < 0) return out;
  while (d.next(p) >= 0) {
    const name = NAMES[p.type];
    if (name === undefined) continue;
    const ip = p.type === PacketType.Fup || p.type === PacketType.Tip || p.type === PacketType.TipPge;
    out.push(ip && p.a !== 0 ? `${name} ipc=${p.a}` : name);
  }
  return out;
}

/** The same from libipt's dump of the capture (`mode leaf=32` is MODE.TSX). */
function capturePackets(ref: string): string[] {
  const text = gunzipSync(
    readFileSync(corpusPath("real", "hase", "reference", `${ref}.ptref-dump.txt.gz`)!),
  ).toString();
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const [, , name, ...rest] = line.split(" ");
    if (name === "mode") out.push(rest[0] === "leaf=32" ? "mode.tsx" : "mode.exec");
    else if (name === "fup" || name === "tip" || name === "tip.pge")
      out.push(rest[0] === "ipc=0" ? name : `${name} ${rest[0]}`);
    else if (name !== undefined && Object.values(NAMES).includes(name)) out.push(name);
  }
  return out;
}

/** The IPBytes seen per IP packet kind, sorted: { fup: ["ipc=3"], ... }. */
function compressions(list: readonly string[]): Record<string, string[]> {
  const seen: Record<string, Set<string>> = {};
  for (const l of list) {
    const [kind, ipc] = l.split(" ");
    if (!ipc) continue;
    seen[kind!] ??= new Set();
    seen[kind!]!.add(ipc);
  }
  return Object.fromEntries(Object.entries(seen).map(([k, v]) => [k, [...v].sort()]));
}

/** The longest PSB+ (by status packet kinds), as kinds. */
function longestPsb(list: readonly string[]): string[] {
  let best: string[] = [];
  for (let k = list.indexOf("psb"); k >= 0; k = list.indexOf("psb", k + 1)) {
    const kinds = list.slice(k + 1, list.indexOf("psbend", k)).map((l) => l.split(" ")[0]!);
    if (kinds.length > best.length) best = kinds;
  }
  return best;
}

const skip =
  skipUnlessCorpus(...LOOPY) ||
  skipUnlessCorpus("real", "hase", "reference") ||
  (valgrindVersion() === undefined && "valgrind is not installed");

describe("ptkit simulate of HASE loopy matches the captures' packet kinds and IP compressions", {
  skip,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-hase-sim-"));
  const program = join(dir, "loopy");
  if (!skip) copyFileSync(corpusPath(...LOOPY)!, program);
  spawnSync("chmod", ["+x", program]);

  for (const c of CAPTURES) {
    test(`${c.preset} (${c.ref})`, async () => {
      const io = captureIo(dir);
      const trace = join(dir, `${c.preset}.pt`);
      const code = await main(["simulate", "--cpu", c.preset, ...c.options, "-o", trace, "--", program], io);
      assert.equal(code, 0, io.err.join(""));
      const model = modelPackets(new Uint8Array(readFileSync(trace)));
      const real = capturePackets(c.ref);
      // IP compressions: every kind the model writes uses only what the capture shows.
      const want = compressions(real);
      for (const [kind, ipcs] of Object.entries(compressions(model))) {
        if (!want[kind]) continue;
        for (const ipc of ipcs)
          assert.ok(want[kind]!.includes(ipc), `${kind} ${ipc}: the capture has ${want[kind]}`);
      }
      assert.deepEqual(compressions(model).fup, ["ipc=3"]);
      // PSB+ order, over the kinds of the capture's fullest PSB+.
      const realPsb = longestPsb(real);
      const modelPsb = longestPsb(model).filter((k) => realPsb.includes(k));
      assert.deepEqual(modelPsb, realPsb);
    });
  }
});

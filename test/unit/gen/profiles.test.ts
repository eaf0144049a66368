/**
 * CPU behaviour profiles (src/unit/profiles.ts): per profile, the packet-level
 * properties the profile promises: FUP and TIP IP compression, PSB+ order, what
 * TraceEn 0 -> 1 writes, BDM70's PSB+ while filtered out, CYC around a compound
 * event's FUP. Every trace also decodes with ptkit's packet decoder.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PacketDecoder } from "../../../src/packet/decoder.js";
import { Packet, PacketType } from "../../../src/packet/types.js";
import {
  BROADWELL_PROFILE,
  type CpuProfile,
  GOLDEN_COVE_PROFILE,
  PRESET_NAMES,
  PRESETS,
  SDM_PROFILE,
  SKYLAKE_PROFILE,
} from "../../../src/unit/index.js";
import { Msr } from "../../../src/unit/msr-layout.js";
import { BRANCHES, type CtlFields, ctl, genBytes, insn, jsonl, packetList } from "./helpers.js";

const PROFILES: Record<string, CpuProfile> = {
  broadwell: BROADWELL_PROFILE,
  skylake: SKYLAKE_PROFILE,
  goldenCove: GOLDEN_COVE_PROFILE,
  sdm: SDM_PROFILE,
};

const KERNEL_IP = "0xffffffff81000010";
const USER: CtlFields = { TraceEn: 1, BranchEn: 1, User: 1, ToPA: 1 };

/** The packet list with each IP packet's IPBytes: "fup 0x1001 ipc=3". */
function withIpc(bytes: Uint8Array): string[] {
  const list = packetList(bytes);
  assert.ok(!list.some((l) => l.startsWith("error")), `ptkit cannot decode: ${list.join(", ")}`);
  const d = new PacketDecoder(bytes);
  const p = new Packet();
  d.syncSet(0);
  const out: string[] = [];
  for (let k = 0; d.next(p) >= 0; k++) {
    const ipPacket =
      p.type === PacketType.Fup ||
      p.type === PacketType.Tip ||
      p.type === PacketType.TipPge ||
      p.type === PacketType.TipPgd;
    out.push(ipPacket && p.a !== 0 ? `${list[k]} ipc=${p.a}` : list[k]!);
  }
  return out;
}

function run(profile: CpuProfile, x: string, ctlFields: CtlFields, status?: bigint): string[] {
  return withIpc(genBytes(x, { ctl: ctlFields, status }, { profile }));
}

/** The packets from the PSB at `from` on to its PSBEND, inclusive. */
function psbPlus(list: readonly string[], from = list.indexOf("psb")): string[] {
  return list.slice(from, list.indexOf("psbend", from) + 1);
}

/** A packet's kind: its first word ("mode.exec 64 ..." -> "mode.exec"). */
const kind = (line: string) => line.split(" ")[0]!;

describe("every preset has a profile, every behaviour its evidence", () => {
  test("profiles of the presets", () => {
    for (const name of PRESET_NAMES) {
      const p = PRESETS[name].profile;
      for (const key of [
        "fupIp",
        "tipIp",
        "psbOrder",
        "enablePsb",
        "filteredPsb",
        "cycCompound",
        "tnt",
        "errata",
      ] as const) {
        assert.ok(p[key].evidence.length > 10, `${name}.${key} has no evidence`);
      }
    }
    assert.equal(PRESETS.broadwell.profile, BROADWELL_PROFILE);
    assert.equal(PRESETS.skylake.profile, SKYLAKE_PROFILE);
    assert.equal(PRESETS.alderlakeP.profile, GOLDEN_COVE_PROFILE);
    assert.equal(PRESETS.sapphireRapids.profile, GOLDEN_COVE_PROFILE);
    assert.ok(BROADWELL_PROFILE.errata.value.includes("bdm70"));
  });
});

describe("TNT form", () => {
  test("Broadwell: long TNTs of up to 44 outcomes; Skylake and the SDM profile: short TNTs of up to 6", () => {
    const recs: object[] = [];
    for (let k = 0; k < 53; k++) recs.push(insn(0x1000 + 2 * k, 2, "cond-branch"));
    recs.push(insn(0x1000 + 2 * 53, 2, "jump-indirect"), insn(0x2000, 1));
    const tnts = (profile: CpuProfile) =>
      run(profile, jsonl(...recs), { ...BRANCHES, User: 1 }).filter((l) => l.startsWith("tnt"));
    assert.deepEqual(tnts(BROADWELL_PROFILE), [`tnt64 ${"N".repeat(44)}`, "tnt64 NNNNNNNNN"]);
    for (const profile of [SKYLAKE_PROFILE, SDM_PROFILE])
      assert.deepEqual(tnts(profile), [...Array(8).fill("tnt NNNNNN"), "tnt NNNNN"]);
  });
});

for (const [name, profile] of Object.entries(PROFILES)) {
  describe(`profile ${name}`, () => {
    test("FUP and TIP payloads: uncompressed (6 bytes) or the shortest", () => {
      // An indirect jump, then an interrupt whose FUP and TIP are near the last IP.
      const x = jsonl(
        insn(0x401000, 2, "jump-indirect"),
        insn(0x401100, 1),
        { k: "interrupt", vector: 32, from: "0x401101", to: "0x401200" },
        insn(0x401200, 1),
      );
      const p = run(profile, x, BRANCHES);
      const after = p.slice(p.indexOf("psbend") + 1);
      const fupIpc = profile.fupIp.value === "none" ? 3 : 1;
      const tipIpc = profile.tipIp.value === "none" ? 3 : 1;
      assert.deepEqual(after, [
        `tip 0x401100 ipc=${tipIpc}`,
        `fup 0x401101 ipc=${fupIpc}`,
        `tip 0x401200 ipc=${tipIpc}`,
        `fup 0x401201 ipc=${fupIpc}`,
        "tip.pgd -",
      ]);
    });

    test("PSB+ order", () => {
      const p = run(profile, jsonl(insn(0x1000, 1)), { ...BRANCHES, TSCEn: 1, MTCEn: 1 });
      const kinds = psbPlus(p).map(kind);
      const want =
        profile === SKYLAKE_PROFILE
          ? // quipper (Skylake 6/78/3)
            ["psb", "mode.tsx", "mode.exec", "fup", "pip", "tsc", "tma", "cbr", "psbend"]
          : // HASE Broadwell, and the SDM profile's choice
            ["psb", "tsc", "tma", "cbr", "pip", "mode.tsx", "mode.exec", "fup", "psbend"];
      assert.deepEqual(kinds, want);
    });

    test("TraceEn 0 -> 1 with PacketByteCnt != 0: a full PSB+ (Broadwell) or TSC, TMA, CBR", () => {
      const off = ctl({ ...BRANCHES, TSCEn: 1, TraceEn: 0 });
      const on = ctl({ ...BRANCHES, TSCEn: 1 });
      const x = jsonl(
        insn(0x1000, 2, "jump-indirect"),
        { k: "wrmsr", msr: Msr.Ctl, value: `0x${off.lo.toString(16)}` },
        insn(0x2000, 1),
        { k: "wrmsr", msr: Msr.Ctl, value: `0x${on.lo.toString(16)}` },
        insn(0x3000, 1),
      );
      const p = run(profile, x, { ...BRANCHES, TSCEn: 1 });
      const re = p.slice(p.indexOf("tip.pgd -") + 1);
      if (profile.enablePsb.value === "always") {
        // Case 2b's order: TIP.PGE, then PSB+ with FUP at the same IP.
        assert.deepEqual(re.slice(0, 2), ["tip.pge 0x3000 ipc=3", "psb"]);
        assert.ok(psbPlus(re).includes("fup 0x3000 ipc=3"));
      } else {
        assert.ok(!re.includes("psb"));
        assert.deepEqual(re.slice(0, 3).map(kind), ["tsc", "cbr", "tip.pge"]);
      }
    });

    test("a PSB+ while filtered out, then TIP.PGE: BDM70's MODE.TSX, MODE.Exec, FUP, or none", () => {
      // User-only tracing enabled in the kernel; SYSRET enables packet generation.
      const x = jsonl(
        { k: "cpl", cpl: 0 },
        insn(KERNEL_IP, 3, "sysret"),
        { k: "cpl", cpl: 3 },
        insn(0x401002, 1),
      );
      const p = run(profile, x, USER);
      const psb = psbPlus(p);
      const rest = p.slice(psb.length);
      if (profile.filteredPsb.value === "bdm70") {
        const status =
          profile === SKYLAKE_PROFILE
            ? ["mode.tsx", "mode.exec", "fup", "cbr"]
            : ["cbr", "mode.tsx", "mode.exec", "fup"];
        assert.deepEqual(psb.map(kind), ["psb", ...status, "psbend"]);
        assert.ok(psb.includes("fup 0x401002 ipc=3"), psb.join(", "));
        // No MODE.Exec before the TIP.PGE, which is not compressed against the FUP.
        assert.deepEqual(rest[0], "tip.pge 0x401002 ipc=3");
      } else {
        assert.deepEqual(psb, ["psb", "cbr 37", "psbend"]);
        assert.deepEqual(rest.slice(0, 2).map(kind), ["mode.exec", "tip.pge"]);
      }
    });

    test("a PSB+ while filtered out followed by another packet has no MODE.Exec and FUP", () => {
      const x = jsonl(
        { k: "cpl", cpl: 0 },
        insn(KERNEL_IP, 1),
        { k: "cycles", n: 2000 },
        insn("0xffffffff81000011", 3, "sysret"),
        { k: "cpl", cpl: 3 },
        insn(0x401002, 1),
      );
      const p = run(profile, x, { ...USER, MTCEn: 1, MTCFreq: 0 });
      assert.deepEqual(psbPlus(p).map(kind), ["psb", "cbr", "psbend"]);
      const pge = p.findIndex((l) => l.startsWith("tip.pge"));
      assert.equal(kind(p[pge - 1]!), "mode.exec");
      assert.equal(kind(p[pge - 2]!), "mtc");
    });

    test("cycle-accurate mode: the CYC of an interrupt goes before its FUP or before its TIP", () => {
      const x = jsonl(
        insn(0x1000, 1),
        { k: "cycles", n: 7 },
        { k: "interrupt", vector: 32, from: "0x1001", to: "0x2000" },
        insn(0x2000, 1),
        { k: "cycles", n: 5 },
      );
      const p = run(profile, x, { ...BRANCHES, CYCEn: 1 });
      const after = p.slice(p.indexOf("psbend") + 1).map(kind);
      const compound =
        profile.cycCompound.value === "after-fup"
          ? ["fup", "cyc", "tip", "fup", "cyc", "tip.pgd"]
          : ["cyc", "fup", "tip", "cyc", "fup", "tip.pgd"];
      assert.deepEqual(after, compound);
    });
  });
}

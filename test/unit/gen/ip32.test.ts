/**
 * IP payloads on a processor whose linear addresses are 32 bits
 * (CPUID.80000008H:EAX[15:8] = 32): the 2- and 4-byte IPBytes forms only, never the
 * 6- or 8-byte ones (emitter.ts `ip32`), also where the profile writes uncompressed
 * IPs; IPs above 2^32-1 are refused with a message. The traces decode with ptkit to
 * the executed instructions.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Image } from "../../../src/image/index.js";
import { PacketDecoder } from "../../../src/packet/decoder.js";
import { Ipc, Packet, PacketType } from "../../../src/packet/types.js";
import { BROADWELL_PROFILE } from "../../../src/unit/profiles.js";
import { runInsns } from "../../flow/run.js";
import { BRANCHES, gen, genBytes, insn, jsonl } from "./helpers.js";

const IP32 = { linearAddressBits: 32 };

/** IPBytes of every FUP/TIP/TIP.PGE/TIP.PGD in a trace. */
function ipBytes(trace: Uint8Array): number[] {
  const d = new PacketDecoder(trace);
  const p = new Packet();
  const out: number[] = [];
  d.syncSet(0);
  while (d.next(p) >= 0) {
    if (
      p.type === PacketType.Fup ||
      p.type === PacketType.Tip ||
      p.type === PacketType.TipPge ||
      p.type === PacketType.TipPgd
    )
      out.push(p.a);
  }
  return out;
}

/** nop at 0x8000000; jmp rax to 0x8123456, a ret there back to 0x8000003. */
const RUN = jsonl(
  insn(0x8000000, 1),
  insn(0x8000001, 2, "jump-indirect"),
  insn(0x8123456, 1, "return"),
  insn(0x8000003, 1),
  { k: "end", ip: "0x8000004" },
);
const IMAGE = (() => {
  const im = new Image();
  im.addRaw("a", Uint8Array.from([0x90, 0xff, 0xe0, 0x90, 0x90]), 0, 0x8000000);
  im.addRaw("b", Uint8Array.from([0xc3]), 0, 0x8123456);
  return im;
})();

describe("IP payloads with 32-bit linear addresses", () => {
  test("the SDM profile: the 6-byte forms without a last IP become 4-byte ones; the others stay", () => {
    // TIP.PGE and the PSB+'s FUP have no last IP; the TIPs change bits 31:16; the last FUP only 15:0.
    assert.deepEqual(ipBytes(genBytes(RUN, { ctl: BRANCHES })), [
      Ipc.Sext48,
      Ipc.Sext48,
      Ipc.Update32,
      Ipc.Update32,
      Ipc.Update16,
      Ipc.Suppressed,
    ]);
    assert.deepEqual(ipBytes(genBytes(RUN, { ctl: BRANCHES, caps: IP32 })), [
      Ipc.Update32,
      Ipc.Update32,
      Ipc.Update32,
      Ipc.Update32,
      Ipc.Update16,
      Ipc.Suppressed,
    ]);
    // The same IPs either way.
    assert.deepEqual(gen(RUN, { ctl: BRANCHES, caps: IP32 }), gen(RUN, { ctl: BRANCHES }));
  });

  test("a profile that writes uncompressed IPs (Broadwell's 6-byte ones) writes 4-byte ones", () => {
    const wide = ipBytes(genBytes(RUN, { ctl: BRANCHES }, { profile: BROADWELL_PROFILE }));
    assert.ok(wide.includes(Ipc.Sext48));
    const narrow = ipBytes(genBytes(RUN, { ctl: BRANCHES, caps: IP32 }, { profile: BROADWELL_PROFILE }));
    assert.ok(
      narrow.every((ipc) => ipc === Ipc.Update32 || ipc === Ipc.Suppressed),
      narrow.join(),
    );
  });

  test("ptkit decodes the 32-bit trace to the executed instructions", () => {
    const t = runInsns(genBytes(RUN, { ctl: BRANCHES, caps: IP32 }), { image: IMAGE });
    assert.deepEqual(
      t.ips.map((ip) => ip.toString(16)),
      ["8000000", "8000001", "8123456", "8000003"],
    );
    assert.ok(!t.lines.some((l) => l.startsWith("[error")), t.lines.join("\n"));
  });

  test("an IP above 2^32-1 is refused, naming it", () => {
    const x = jsonl(insn("0x100000000", 1), { k: "end", ip: "0x100000001" });
    assert.throws(() => genBytes(x, { ctl: BRANCHES, caps: IP32 }), /IP 0x100000000 is above 2\^32-1/);
  });
});

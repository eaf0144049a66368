/** The decode of the packets most traces are made of, beside decodePacket. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DecodeQuirk, decodeFrequent, decodePacket } from "../../src/packet/decode.js";
import { Packet } from "../../src/packet/types.js";

const ALL_QUIRKS = DecodeQuirk.Skd007 | DecodeQuirk.Skz84;

function fields(pkt: Packet): number[] {
  return [pkt.type, pkt.size, pkt.lo, pkt.hi, pkt.a, pkt.b, pkt.flags];
}

/** Header `opc`, then `tail`, cut to `length` bytes. */
function packetBytes(opc: number, tail: readonly number[], length: number): Uint8Array {
  return Uint8Array.from([opc, ...tail]).subarray(0, length);
}

describe("decodeFrequent", () => {
  test("every header byte, whole or cut short: decoded as decodePacket decodes it, or left to it", () => {
    const tails = [
      [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88],
      [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
      [0x02, 0xf3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
    ];
    const decoded = new Set<number>();
    for (let opc = 0; opc < 256; opc++) {
      for (const tail of tails) {
        for (let length = 1; length <= 9; length++) {
          const buf = packetBytes(opc, tail, length);
          const fast = new Packet();
          // Leftovers of another packet, which both decoders must overwrite.
          fast.lo = 7;
          fast.flags = 1;
          const size = decodeFrequent(buf, 0, buf.length, fast);
          if (size === 0) continue;
          if (length === 9) decoded.add(opc);
          for (const quirks of [0, ALL_QUIRKS]) {
            const general = new Packet();
            assert.equal(decodePacket(buf, 0, buf.length, general, 0, quirks), size, `0x${opc.toString(16)}`);
            assert.deepEqual(fields(fast), fields(general), `0x${opc.toString(16)} length ${length}`);
          }
        }
      }
    }
    // TNT-8 (even, past PAD and the extended opcode), CYC without extension, and the
    // FUP/TIP family with every IPBytes value that is not reserved (5 and 7 are).
    const expected = new Set<number>();
    for (let opc = 0; opc < 256; opc++) {
      const ipc = opc >>> 5;
      const ipFamily = [0x01, 0x0d, 0x11, 0x1d].includes(opc & 0x1f) && ipc !== 5 && ipc !== 7;
      if ((opc % 2 === 0 && opc > 2) || (opc & 7) === 3 || ipFamily) expected.add(opc);
    }
    assert.deepEqual(
      [...decoded].sort((a, b) => a - b),
      [...expected].sort((a, b) => a - b),
    );
  });
});

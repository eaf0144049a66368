/** `ptkit dump --quiet` skims the packets its header byte decides: it must print what a full dump's errors are. */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { TraceBytes } from "../../src/packet/trace-bytes.js";
import { Flag, PacketType } from "../../src/packet/types.js";
import { Dumper, type DumpNote } from "../../src/session/dump-listing.js";
import { defaultDumpOptions } from "../../src/session/dump-options.js";
import { LineWriter } from "../../src/session/io.js";
import { encode } from "../packet/helpers.js";
import { hostileBytes } from "../packet/hostile.js";

/** What a dump of `bytes` (read `window` bytes at a time) prints, its notes, where it stopped, and whether it synced. */
function dump(bytes: Uint8Array, window: number, quiet: boolean, stop?: number) {
  const options = { ...defaultDumpOptions(), quiet };
  let text = "";
  const notes: DumpNote[] = [];
  const out = new LineWriter((t) => {
    text += t;
  });
  const dumper = new Dumper(options, out, (note) => notes.push(note), stop !== undefined);
  const memory = { size: bytes.length, read: (o: number, n: number) => bytes.slice(o, o + n) };
  const stopAt = dumper.run(TraceBytes.read(memory, window), stop === undefined ? undefined : { stop });
  out.flush();
  return { text, notes, stopAt, synced: dumper.synced, carry: { ...dumper.carry } };
}

test("a quiet dump prints the full dump's error lines and notes, and stops where and as it does", () => {
  fc.assert(
    fc.property(
      hostileBytes(120),
      fc.integer({ min: 16, max: 96 }),
      fc.option(fc.integer({ min: 0, max: 400 })),
      (bytes, window, stop) => {
        const piece = stop === null ? undefined : stop;
        const full = dump(bytes, window, false, piece);
        const quiet = dump(bytes, window, true, piece);
        const errors = full.text.split("\n").filter((l) => l.startsWith("["));
        assert.equal(quiet.text, errors.map((l) => `${l}\n`).join(""));
        assert.deepEqual(quiet.notes, full.notes);
        assert.equal(quiet.stopAt, full.stopAt);
        assert.equal(quiet.synced, full.synced);
        assert.deepEqual(quiet.carry, full.carry);
      },
    ),
    { numRuns: 500 },
  );
});

test("in a BBP block a quiet dump decodes BIPs, whose header looks like a TNT-8", () => {
  const bip = encode({ type: PacketType.Bip, a: 3, b: 4, lo: 0xc9c9c9c9 });
  assert.equal(bip[0]! & 1, 0, "a BIP header is even, as a TNT-8's is");
  const bytes = Uint8Array.from([
    ...encode({ type: PacketType.Psb }),
    ...encode({ type: PacketType.PsbEnd }),
    ...encode({ type: PacketType.Bbp, a: 1, flags: Flag.Bip4 }),
    ...bip,
    ...encode({ type: PacketType.Bep }),
    ...encode({ type: PacketType.Tnt8, a: 2, lo: 1 }),
  ]);
  const full = dump(bytes, 64, false);
  assert.ok(full.text.includes("bip"), full.text);
  assert.equal(dump(bytes, 64, true).text, "");
});

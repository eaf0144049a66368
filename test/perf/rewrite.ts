/**
 * Real perf.data files changed for tests: a binary's recorded path moved to one the
 * test controls (a recorded path may exist on the machine running the test, and
 * then be found there), a feature section extended. File mode only.
 */
import assert from "node:assert/strict";
import { concat, Le, record } from "../../tools/perf/perf-data-writer.js";

const u64 = (b: Uint8Array, at: number) =>
  Number(new DataView(b.buffer, b.byteOffset).getBigUint64(at, true));
const u16 = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8);

interface Rewrite {
  /** A record of the data section (an AUXTRACE record without its payload, which is kept). */
  record?: (rec: Uint8Array) => Uint8Array;
  /** A feature section's body, by feature bit. */
  feature?: (bit: number, body: Uint8Array) => Uint8Array;
}

/** `file` with its records and feature sections rewritten, and laid out again after the attributes. */
export function rewriteFile(file: Uint8Array, how: Rewrite): Uint8Array {
  const dataAt = u64(file, 40);
  const dataEnd = dataAt + u64(file, 48);
  const parts: Uint8Array[] = [];
  for (let at = dataAt; at < dataEnd; ) {
    const size = u16(file, at + 6);
    assert.ok(size >= 8, `a record at ${at}`);
    const rec = file.subarray(at, at + size);
    parts.push(how.record?.(rec) ?? rec);
    at += size;
    // AUXTRACE (71): its payload follows the record.
    if (u16(file, at - size) === 71) {
      const payload = u64(rec, 8);
      parts.push(file.subarray(at, at + payload));
      at += payload;
    }
  }
  const data = concat(parts);
  const bits: number[] = [];
  for (let bit = 0; bit < 256; bit++) if (file[72 + (bit >> 3)]! & (1 << (bit & 7))) bits.push(bit);
  const bodies = bits.map((bit, k) => {
    const body = file.subarray(
      u64(file, dataEnd + 16 * k),
      u64(file, dataEnd + 16 * k) + u64(file, dataEnd + 16 * k + 8),
    );
    return how.feature?.(bit, body) ?? body;
  });
  const table = new Le();
  let at = dataAt + data.length + 16 * bits.length;
  for (const b of bodies) {
    table.u64(at).u64(b.length);
    at += b.length;
  }
  const head = file.slice(0, dataAt);
  new DataView(head.buffer).setBigUint64(48, BigInt(data.length), true);
  return concat([head, data, table.done(), ...bodies]);
}

const utf8 = new TextDecoder();
/** Where MMAP's and MMAP2's file name starts. */
const NAME_AT: Record<number, number> = { 1: 40, 10: 72 };
const BUILD_ID_FEATURE = 2;

/** The NUL-terminated string at b[at], and where its padding to `align` ends. */
function paddedString(b: Uint8Array, at: number, align: number): { text: string; end: number } {
  const nul = b.indexOf(0, at);
  const len = (nul < 0 ? b.length : nul) - at;
  return { text: utf8.decode(b.subarray(at, at + len)), end: at + Math.ceil((len + 1) / align) * align };
}

/**
 * `file` with every MMAP/MMAP2 record and build_id entry of the binary at `from`
 * naming `to` instead (the records keep their sample_id trailer); asserts that
 * `from` was there.
 */
export function renameBinary(file: Uint8Array, from: string, to: string): Uint8Array {
  let renamed = 0;
  const out = rewriteFile(file, {
    record: (rec) => {
      const nameAt = NAME_AT[u16(rec, 0)];
      if (nameAt === undefined) return rec;
      const name = paddedString(rec, nameAt, 8);
      if (name.text !== from) return rec;
      renamed++;
      const body = concat([rec.subarray(8, nameAt), new Le().str(to).done(), rec.subarray(name.end)]);
      return record(u16(rec, 0), u16(rec, 4), body);
    },
    feature: (bit, body) => {
      if (bit !== BUILD_ID_FEATURE) return body;
      const entries: Uint8Array[] = [];
      for (let at = 0; at + 8 <= body.length; ) {
        const size = u16(body, at + 6);
        const entry = body.subarray(at, at + size);
        // header, pid, build id (24 bytes), then the name padded to 64.
        if (paddedString(entry, 36, 1).text === from) {
          const le = new Le().raw(entry.subarray(8, 36)).str(to, 64);
          const header = new Le()
            .u32(entry[0]! | (entry[1]! << 8))
            .u16(u16(entry, 4))
            .u16(8 + le.length);
          entries.push(concat([header.done(), le.done()]));
        } else entries.push(entry);
        at += size;
      }
      return concat(entries);
    },
  });
  assert.ok(renamed > 0, `${from} is mapped in the file`);
  return out;
}

/**
 * The parts of a perf.data file (not a pipe) outside the data section: the events'
 * attributes with their ids, and the feature sections after the data.
 */
import { type PerfEvent, parseAttr } from "./attr.js";
import { u64n } from "./bytes.js";
import { isParsedFeature, type PerfFeatures, parseFeature } from "./features.js";
import type { PerfFileHeader } from "./file-header.js";
import type { ByteSource } from "./source.js";

/** What reading them needs: the source, a read clamped to it, and where problems go. */
export interface FileSections {
  source: ByteSource;
  read(offset: number, length: number): Uint8Array;
  report(offset: number, message: string): void;
}

/** Feature sections larger than this are listed but not read. */
const MAX_FEATURE_SIZE = 16 << 20;
/** Events read at most (perf records a handful). */
const MAX_EVENTS = 1 << 16;
/** The largest attribute entry taken: perf_event_attr is 136 bytes today, plus 16 for its ids section. */
const MAX_ATTR_ENTRY = 4096;
/** Bytes of attribute entries read at most (what a corrupt header could make a whole file). */
const MAX_ATTR_BYTES = 16 << 20;

/** The events of the attribute section (struct perf_file_attr: attr, then its ids section). */
export function readFileEvents(f: FileSections, header: PerfFileHeader): PerfEvent[] {
  const { attrs, attrSize } = header;
  const events: PerfEvent[] = [];
  if (attrs.size === 0) return events;
  if (attrSize < 64 + 16 || attrs.size % attrSize !== 0 || attrs.offset + attrs.size > f.source.size) {
    f.report(
      24,
      `bad attribute section: ${attrs.size} bytes at 0x${attrs.offset.toString(16)} in entries of ${attrSize}`,
    );
    if (attrSize < 64 + 16) return events;
  }
  if (attrSize > MAX_ATTR_ENTRY) {
    f.report(16, `attribute entries of ${attrSize} bytes (perf writes about 150): the events are not read`);
    return events;
  }
  const count = Math.min(
    Math.floor(attrs.size / attrSize),
    MAX_EVENTS,
    Math.floor(MAX_ATTR_BYTES / attrSize),
  );
  const b = f.read(attrs.offset, count * attrSize);
  for (let i = 0; (i + 1) * attrSize <= b.length; i++) {
    const p = i * attrSize;
    const attr = parseAttr(b, p, attrSize - 16);
    if (!attr) continue;
    const idsAt = u64n(b, p + attrSize - 16);
    const idsSize = u64n(b, p + attrSize - 8);
    const ids: number[] = [];
    if (idsSize % 8 !== 0 || idsAt + idsSize > f.source.size || idsSize > 8 << 20) {
      f.report(attrs.offset + p, `event ${i}: bad ids section (${idsSize} bytes at 0x${idsAt.toString(16)})`);
    } else if (idsSize > 0) {
      const idb = f.read(idsAt, idsSize);
      for (let q = 0; q + 8 <= idb.length; q += 8) ids.push(u64n(idb, q));
    }
    events.push({ attr, ids });
  }
  return events;
}

/** The feature sections listed in the table at `tableAt` (one {offset, size} per id), into `into`. */
export function readFileFeatures(
  f: FileSections,
  ids: readonly number[],
  tableAt: number,
  into: PerfFeatures,
): void {
  if (ids.length === 0) return;
  if (tableAt >= f.source.size) {
    // Named by the header's data section field: the table's own offset is nowhere in the file.
    f.report(
      40,
      `feature table at 0x${tableAt.toString(16)} (after the data section) is past the end of the file`,
    );
    return;
  }
  const table = f.read(tableAt, ids.length * 16);
  if (table.length < ids.length * 16) {
    f.report(tableAt, `feature table of ${ids.length} entries cut short (file truncated?)`);
  }
  ids.forEach((id, i) => {
    if (i * 16 + 16 > table.length) return;
    const offset = u64n(table, i * 16);
    const size = u64n(table, i * 16 + 8);
    into.sections.push({ id, offset, size });
    if (!isParsedFeature(id)) return;
    if (offset + size > f.source.size || size > MAX_FEATURE_SIZE) {
      f.report(
        tableAt + i * 16,
        `feature section ${id}: ${size} bytes at 0x${offset.toString(16)} not readable`,
      );
      return;
    }
    const body = f.read(offset, size);
    if (!parseFeature(id, body, 0, body.length, into)) {
      f.report(offset, `feature section ${id} is shorter than its contents say`);
    }
  });
}

/**
 * The streaming perf.data reader: header, events (attributes and ids), feature
 * sections, then one record at a time through a bounded window over a
 * {@link ByteSource}. AUXTRACE payloads are skipped, not read (their place is
 * given); COMPRESSED records are decompressed and their records handed out in turn.
 * Problems become diagnostics and reading goes on where the format allows.
 */
import { type PerfEvent, parseAttr, sidebandAttr } from "./attr.js";
import { u16, u32, u64n } from "./bytes.js";
import { ZstdRecordStream } from "./compressed.js";
import { FieldCursor } from "./cursor.js";
import type { PerfDiagnostic } from "./errors.js";
import { type PerfFeatures, parseBuildIds, parseFeature } from "./features.js";
import {
  FILE_HEADER_SIZE,
  type PerfFileHeader,
  PIPE_HEADER_SIZE,
  parseFileHeader,
  rawHeader,
} from "./file-header.js";
import { type FileSections, readFileEvents, readFileFeatures } from "./file-sections.js";
import type { PerfRecord } from "./record.js";
import { idPositions, parseSampleHead, parseTrailer, type SampleId } from "./sample-id.js";
import type { ByteSource } from "./source.js";
import { RecordType, USER_RECORD_START } from "./types.js";

export interface PerfReaderOptions {
  /** Called for every problem found (they are also kept, up to a limit, in `diagnostics`). */
  onDiagnostic?: (d: PerfDiagnostic) => void;
  /** Bytes read at a time (default 1 MiB; at least 64 KiB, the largest record). */
  windowSize?: number;
  /**
   * Read the source as libipt's pevent sideband (`perf record` records with no
   * header, as DynamoRIO's drpt2trace and libipt's tests keep them), their
   * sample_id fields laid out by this PERF_SAMPLE_* mask (`--pevent:sample-type`).
   */
  peventSampleType?: number;
}

/** Diagnostics kept in `diagnostics`; more are counted in `diagnosticCount`. */
const KEPT_DIAGNOSTICS = 1000;
const AUXTRACE_RECORD_SIZE = 48;

export class PerfDataReader {
  readonly header: PerfFileHeader;
  /** The events (attributes and ids), in file order; in pipe mode they arrive as HEADER_ATTR records. */
  readonly events: PerfEvent[] = [];
  readonly features: PerfFeatures = { sections: [] };
  /** Where records start and end in the source. */
  readonly dataStart: number;
  readonly dataEnd: number;
  readonly diagnostics: PerfDiagnostic[] = [];
  diagnosticCount = 0;

  private readonly source: ByteSource;
  private readonly onDiagnostic: ((d: PerfDiagnostic) => void) | undefined;
  private readonly windowSize: number;
  private readonly idToEvent = new Map<number, number>();
  private readonly reported = new Set<string>();
  private idPos = { sample: -1, trailer: -1 };
  /** The offset of the furthest record read so far: what lies before it was absorbed already. */
  private highWater = -1;
  private innerFresh = true;
  private pos: number;
  private win: Uint8Array = new Uint8Array(0);
  private winStart = 0;
  // Decompressed bytes of COMPRESSED records not handed out yet.
  private inner: Uint8Array = new Uint8Array(0);
  private innerPos = 0;
  private innerBase = 0;
  private innerFrom = 0;
  private zstd = new ZstdRecordStream();

  constructor(source: ByteSource, options: PerfReaderOptions = {}) {
    this.source = source;
    this.onDiagnostic = options.onDiagnostic;
    this.windowSize = Math.max(options.windowSize ?? 1 << 20, 1 << 16);
    const pevent = options.peventSampleType;
    this.header =
      pevent === undefined ? parseFileHeader(this.read(0, FILE_HEADER_SIZE)) : rawHeader(source.size);
    if (this.header.pipe) {
      this.dataStart = PIPE_HEADER_SIZE;
      this.dataEnd = source.size;
    } else {
      const { data } = this.header;
      this.dataStart = data.offset;
      let end = data.offset + data.size;
      if (data.size === 0 && source.size > data.offset) {
        this.report(
          40,
          "data section size is 0 (perf record did not finish?): reading records to the end of the file",
        );
        end = source.size;
      } else if (end > source.size) {
        this.report(
          40,
          `data section [0x${data.offset.toString(16)}, 0x${end.toString(16)}) runs past the end of the file (0x${source.size.toString(16)}): file truncated`,
        );
        end = source.size;
      }
      this.dataEnd = Math.max(end, this.dataStart);
      const sections: FileSections = {
        source,
        read: (o, n) => this.read(o, n),
        report: (o, m) => this.report(o, m),
      };
      for (const event of readFileEvents(sections, this.header)) this.addEvent(event);
      if (pevent !== undefined) this.addEvent({ attr: sidebandAttr(pevent), ids: [] });
      readFileFeatures(sections, this.header.features, data.offset + data.size, this.features);
      this.nameEvents();
    }
    this.pos = this.dataStart;
  }

  /** Go back to the first record. */
  rewind(): void {
    this.pos = this.dataStart;
    this.inner = new Uint8Array(0);
    this.innerPos = this.innerBase = 0;
    this.zstd = new ZstdRecordStream();
  }

  /** The next record into `rec`; false at the end of the data. */
  next(rec: PerfRecord): boolean {
    if (this.nextInner(rec)) return true;
    const end = this.dataEnd;
    const at = this.pos;
    if (at >= end) {
      this.endInner();
      return false;
    }
    if (end - at < 8) {
      this.report(at, `${end - at} bytes at the end of the data are too few for a record header`);
      this.pos = end;
      return false;
    }
    const w = this.ensure(at, 8);
    const size = u16(this.win, w + 6);
    if (size < 8) {
      this.report(at, `record size ${size} is smaller than its 8-byte header: cannot find the next record`);
      this.pos = end;
      return false;
    }
    if (at + size > end) {
      this.report(at, `record of ${size} bytes runs past the end of the data (0x${end.toString(16)})`);
      this.pos = end;
      return false;
    }
    const p = this.ensure(at, size);
    this.fill(rec, this.win, p, at, -1);
    let next = at + size;
    if (rec.type === RecordType.Auxtrace) next = this.auxPayload(rec, next);
    else if (rec.type === RecordType.HeaderTracingData && size >= 12) {
      // In a pipe the tracing data follows its record, padded to 8 bytes. The size is
      // a u32: rounded in Number arithmetic (`& ~7` would turn 2^31 and more negative).
      const padded = Math.ceil(u32(this.win, p + 8) / 8) * 8;
      if (next + padded > end) {
        this.report(
          at,
          `HEADER_TRACING_DATA of ${padded} bytes runs past the end of the data: file truncated`,
        );
      }
      next = Math.min(end, next + padded);
    }
    this.pos = next;
    // Records read again after rewind() describe nothing new.
    const fresh = at > this.highWater;
    if (fresh) this.highWater = at;
    if (rec.type === RecordType.Compressed || rec.type === RecordType.Compressed2)
      this.decompress(rec, fresh);
    else if (fresh) this.absorb(rec);
    return true;
  }

  /**
   * The sample_id fields of `rec` (SAMPLE's leading fields, or the sample_id_all
   * trailer of other kernel records) into `out`; false when it has none.
   */
  sampleId(rec: PerfRecord, out: SampleId): boolean {
    out.clear();
    if (this.events.length === 0 || rec.type >= USER_RECORD_START) return false;
    const b = rec.bytes;
    const isSample = rec.type === RecordType.Sample;
    let event = 0;
    if (this.events.length > 1) {
      const pos = isSample ? this.idPos.sample : this.idPos.trailer;
      const idAt = isSample ? 8 + pos : rec.size - pos;
      if (pos >= 0 && idAt >= 8 && idAt + 8 <= rec.size) {
        event = this.idToEvent.get(u64n(b, idAt)) ?? 0;
      }
    }
    const attr = this.events[event]!.attr;
    if (!isSample && !attr.sampleIdAll) return false;
    const ok = isSample
      ? parseSampleHead(b, 8, rec.size, attr.sampleType, out)
      : parseTrailer(b, 8, rec.size, attr.sampleType, out);
    if (!ok) {
      out.clear();
      return false;
    }
    out.event = event;
    return true;
  }

  /** The index of the event with sample id `id`, or -1. */
  eventOfId(id: number): number {
    return this.idToEvent.get(id) ?? -1;
  }

  private report(offset: number, message: string): void {
    // Reading the records again (rewind) finds the same problems: report each once.
    const key = `${offset}:${message}`;
    if (this.reported.has(key)) return;
    if (this.reported.size < KEPT_DIAGNOSTICS * 10) this.reported.add(key);
    const d = { offset, message };
    this.diagnosticCount++;
    if (this.diagnostics.length < KEPT_DIAGNOSTICS) this.diagnostics.push(d);
    this.onDiagnostic?.(d);
  }

  /** Bytes [offset, offset + length) of the source, cut at its end (never a read outside it). */
  private read(offset: number, length: number): Uint8Array {
    const size = this.source.size;
    if (offset >= size || length <= 0) return new Uint8Array(0);
    return this.source.read(offset, Math.min(length, size - offset));
  }

  /** Make [at, at + n) of the source readable in `win`; returns its index there. */
  private ensure(at: number, n: number): number {
    const rel = at - this.winStart;
    if (rel >= 0 && rel + n <= this.win.length) return rel;
    this.win = this.read(at, Math.max(n, Math.min(this.windowSize, this.dataEnd - at)));
    this.winStart = at;
    return 0;
  }

  private fill(rec: PerfRecord, b: Uint8Array, p: number, offset: number, innerOffset: number): void {
    rec.offset = offset;
    rec.innerOffset = innerOffset;
    rec.type = u32(b, p);
    rec.misc = u16(b, p + 4);
    rec.size = u16(b, p + 6);
    rec.bytes = b.subarray(p, p + rec.size);
    rec.auxOffset = -1;
    rec.auxSize = rec.auxAvailable = 0;
  }

  /** Note where an AUXTRACE record's payload is; returns the offset of the next record. */
  private auxPayload(rec: PerfRecord, payloadAt: number): number {
    if (rec.size < AUXTRACE_RECORD_SIZE) {
      this.report(rec.offset, `AUXTRACE record of ${rec.size} bytes is shorter than 48`);
      return payloadAt;
    }
    const declared = u64n(rec.bytes, 8);
    const available = Math.min(declared, this.dataEnd - payloadAt);
    rec.auxOffset = payloadAt;
    rec.auxSize = declared;
    rec.auxAvailable = available;
    if (available < declared) {
      this.report(
        rec.offset,
        `AUXTRACE payload of ${declared} bytes cut short: ${available} bytes in the file`,
      );
    }
    return payloadAt + available;
  }

  /** Take in what a record says about the file itself: events, features, compressed records. */
  private absorb(rec: PerfRecord): void {
    const b = rec.bytes;
    switch (rec.type) {
      case RecordType.HeaderAttr: {
        const attr = parseAttr(b, 8, rec.size - 8);
        if (!attr) {
          this.report(rec.offset, "HEADER_ATTR too short for an attribute");
          return;
        }
        const ids: number[] = [];
        for (let p = 8 + (attr.size || 64); p + 8 <= rec.size; p += 8) ids.push(u64n(b, p));
        this.addEvent({ attr, ids });
        this.nameEvents();
        return;
      }
      case RecordType.HeaderFeature: {
        if (rec.size < 16) {
          this.report(rec.offset, "HEADER_FEATURE too short for a feature id");
          return;
        }
        const id = u64n(b, 8);
        this.features.sections.push({ id, offset: rec.offset + 16, size: rec.size - 16 });
        if (!parseFeature(id, b, 16, rec.size, this.features)) {
          this.report(rec.offset, `feature section ${id} is shorter than its contents say`);
        }
        this.nameEvents();
        return;
      }
      case RecordType.IdIndex:
        // ID_INDEX maps ids to events too, but perf writes it after HEADER_ATTR, which already does.
        return;
      case RecordType.HeaderBuildId: {
        // A pipe's build ids come as records; a file's are in the build_id feature.
        this.features.buildIds ??= [];
        this.features.buildIds.push(...parseBuildIds(new FieldCursor(b, 0, rec.size)));
        return;
      }
    }
  }

  private addEvent(event: PerfEvent): void {
    const index = this.events.length;
    // perf puts the id in the same place for every event: the first one's layout says where.
    if (index === 0) this.idPos = idPositions(event.attr.sampleType);
    this.events.push(event);
    for (const id of event.ids) this.idToEvent.set(id, index);
  }

  /** Give events their names from event_desc (matched by first id, else by position). */
  private nameEvents(): void {
    const desc = this.features.eventDesc;
    if (!desc) return;
    desc.forEach((d, i) => {
      const index = d.ids.length > 0 ? this.eventOfId(d.ids[0]!) : i;
      const event = this.events[index >= 0 ? index : i];
      if (event) event.name = d.name;
    });
  }

  private decompress(rec: PerfRecord, fresh: boolean): void {
    const headerSize = rec.type === RecordType.Compressed2 ? 16 : 8;
    let end = rec.size;
    if (rec.type === RecordType.Compressed2) {
      // COMPRESSED2 gives the payload size, the record size being padded to 8.
      end = rec.size >= 16 ? Math.min(rec.size, 16 + u64n(rec.bytes, 8)) : 8;
    }
    const out = this.zstd.push(rec.bytes.subarray(headerSize, end));
    if (typeof out === "string") {
      this.report(rec.offset, `COMPRESSED record: ${out}`);
      return;
    }
    // Keep the undelivered tail of earlier output: a record may straddle two COMPRESSED records.
    const left = this.inner.subarray(this.innerPos);
    const joined = new Uint8Array(left.length + out.length);
    joined.set(left);
    joined.set(out, left.length);
    this.innerBase += this.innerPos;
    this.inner = joined;
    this.innerPos = 0;
    this.innerFrom = rec.offset;
    this.innerFresh = fresh;
  }

  private nextInner(rec: PerfRecord): boolean {
    const b = this.inner;
    const p = this.innerPos;
    if (b.length - p < 8) return false;
    const size = u16(b, p + 6);
    if (size < 8) {
      this.report(
        this.innerFrom,
        `decompressed record at 0x${(this.innerBase + p).toString(16)} has size ${size}: rest of this compressed data dropped`,
      );
      this.dropInner();
      return false;
    }
    if (p + size > b.length) return false; // continues in the next COMPRESSED record
    this.fill(rec, b, p, this.innerFrom, this.innerBase + p);
    this.innerPos = p + size;
    if (rec.type === RecordType.Auxtrace || rec.type === RecordType.HeaderTracingData) {
      this.report(
        rec.offset,
        `${rec.type === RecordType.Auxtrace ? "AUXTRACE" : "HEADER_TRACING_DATA"} inside compressed data is not supported: its payload is skipped`,
      );
      this.dropInner();
      return true;
    }
    if (rec.type === RecordType.Compressed || rec.type === RecordType.Compressed2) {
      this.report(rec.offset, "COMPRESSED record inside compressed data ignored");
      return true;
    }
    if (this.innerFresh) this.absorb(rec);
    return true;
  }

  private endInner(): void {
    const left = this.inner.length - this.innerPos;
    if (left > 0)
      this.report(this.innerFrom, `${left} bytes of decompressed data at the end do not make a whole record`);
    this.dropInner();
  }

  private dropInner(): void {
    this.innerBase += this.inner.length;
    this.inner = new Uint8Array(0);
    this.innerPos = 0;
  }
}

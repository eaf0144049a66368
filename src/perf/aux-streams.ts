/**
 * The Intel PT byte streams of a perf.data file: its AUXTRACE buffers grouped by
 * queue (`idx`: one per CPU in per-cpu mode, one per thread in per-thread mode), in
 * file order, as (file offset, size) ranges. In snapshot mode consecutive buffers
 * of a queue are snapshots of the same ring buffer and may repeat each other's
 * bytes; the repeated part is dropped as perf does (intel_pt_find_overlap's rule,
 * comparing bytes from PSB to PSB).
 */
import type { TraceSource } from "../packet/trace-bytes.js";
import { concatBytes, u32, u64n } from "./bytes.js";
import type { PerfDataReader } from "./reader.js";
import { PerfRecord } from "./record.js";
import type { ByteSource } from "./source.js";
import { RecordType } from "./types.js";

/** One AUXTRACE record and where its payload is. */
export interface AuxtraceBuffer {
  /** File offset of the AUXTRACE record. */
  recordOffset: number;
  /** File offset of the payload and how many of its bytes the file holds. */
  dataOffset: number;
  size: number;
  /** The size the record declares (more than `size` when the file is cut short). */
  declaredSize: number;
  /** Offset of the buffer in the AUX area's byte stream. */
  auxOffset: number;
  idx: number;
  tid: number;
  cpu: number;
}

/** A file range of trace bytes. */
export interface AuxRange {
  offset: number;
  size: number;
}

/** One queue's trace: its buffers and the byte ranges that make its stream. */
export interface AuxStream {
  idx: number;
  /** The CPU (-1 in per-thread mode) and thread (-1 in per-cpu mode) of its buffers, distinct values. */
  cpus: number[];
  tids: number[];
  buffers: AuxtraceBuffer[];
  /** The stream in order, overlaps removed. */
  ranges: AuxRange[];
  /** Total bytes of `ranges`. */
  size: number;
}

/** Reading a whole buffer to compare snapshots stops at this size (overlap removal skipped, with a note). */
const MAX_COMPARE = 256 << 20;

/** Every AUXTRACE buffer of the file, in file order (one pass over the records). */
export function auxtraceBuffers(reader: PerfDataReader): AuxtraceBuffer[] {
  const out: AuxtraceBuffer[] = [];
  const rec = new PerfRecord();
  reader.rewind();
  while (reader.next(rec)) {
    if (rec.type !== RecordType.Auxtrace || rec.auxOffset < 0) continue;
    const b = rec.bytes;
    out.push({
      recordOffset: rec.offset,
      dataOffset: rec.auxOffset,
      size: rec.auxAvailable,
      declaredSize: rec.auxSize,
      auxOffset: u64n(b, 16),
      idx: u32(b, 32),
      tid: u32(b, 36) | 0,
      cpu: u32(b, 40) | 0,
    });
  }
  reader.rewind();
  return out;
}

/**
 * Group buffers into streams by queue, ordered by idx. With `snapshot`, bytes a
 * buffer repeats from the one before it are left out; `note` hears of buffers too
 * large to compare.
 */
export function auxStreams(
  source: ByteSource,
  buffers: readonly AuxtraceBuffer[],
  snapshot: boolean,
  note?: (offset: number, message: string) => void,
): AuxStream[] {
  const byIdx = new Map<number, AuxtraceBuffer[]>();
  for (const buf of buffers) {
    const list = byIdx.get(buf.idx) ?? [];
    list.push(buf);
    byIdx.set(buf.idx, list);
  }
  return [...byIdx.keys()]
    .sort((a, b) => a - b)
    .map((idx) => {
      const list = byIdx.get(idx)!;
      const ranges: AuxRange[] = [];
      list.forEach((buf, i) => {
        let skip = 0;
        const prev = list[i - 1];
        if (snapshot && prev && buf.size > 0) {
          if (prev.size > MAX_COMPARE || buf.size > MAX_COMPARE) {
            note?.(
              buf.recordOffset,
              "snapshot buffer too large to compare: overlap with the previous one kept",
            );
          } else {
            skip = newDataStart(
              source.read(prev.dataOffset, prev.size),
              source.read(buf.dataOffset, buf.size),
            );
          }
        }
        if (buf.size > skip) ranges.push({ offset: buf.dataOffset + skip, size: buf.size - skip });
      });
      return {
        idx,
        cpus: [...new Set(list.map((b) => b.cpu))],
        tids: [...new Set(list.map((b) => b.tid))],
        buffers: list,
        ranges,
        size: ranges.reduce((n, r) => n + r.size, 0),
      };
    });
}

const PSB = Uint8Array.from([2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82]);

/** The index of the first PSB in b[from, end), or -1. */
function findPsb(b: Uint8Array, from: number): number {
  outer: for (let i = from; i + PSB.length <= b.length; i++) {
    for (let k = 0; k < PSB.length; k++) if (b[i + k] !== PSB[k]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Where the new data of snapshot `b` starts, given the snapshot `a` before it:
 * nothing before b's first PSB is kept; the longest suffix of `a` that starts at a
 * PSB and that `b` (from its first PSB) starts with is repeated data.
 */
export function newDataStart(a: Uint8Array, b: Uint8Array): number {
  const bStart = findPsb(b, 0);
  if (bStart < 0) return b.length;
  let aStart = findPsb(a, 0);
  if (aStart < 0) return bStart;
  const lenB = b.length - bStart;
  // b cannot end inside a, so a's bytes before its last lenB bytes cannot overlap.
  while (a.length - aStart > lenB) {
    aStart = findPsb(a, aStart + 1);
    if (aStart < 0) return bStart;
  }
  for (;;) {
    const lenA = a.length - aStart;
    let same = true;
    for (let k = 0; k < lenA; k++) {
      if (a[aStart + k] !== b[bStart + k]) {
        same = false;
        break;
      }
    }
    if (same) return bStart + lenA;
    aStart = findPsb(a, aStart + 1);
    if (aStart < 0) return bStart;
  }
}

/** A stream's bytes in one buffer (for streams that fit in memory). */
export function auxStreamBytes(source: ByteSource, stream: AuxStream): Uint8Array {
  const out = new Uint8Array(stream.size);
  let at = 0;
  for (const r of stream.ranges) {
    const chunk = source.read(r.offset, r.size);
    out.set(chunk, at);
    at += chunk.length;
  }
  return at === out.length ? out : out.subarray(0, at);
}

/** Hand a stream's bytes to `sink` piece by piece (at most `chunk` bytes at a time), for streams of any size. */
export function forEachAuxChunk(
  source: ByteSource,
  stream: AuxStream,
  sink: (bytes: Uint8Array) => void,
  chunk = 4 << 20,
): void {
  for (const r of stream.ranges) {
    for (let at = 0; at < r.size; at += chunk) sink(source.read(r.offset + at, Math.min(chunk, r.size - at)));
  }
}

/**
 * The parts of the stream's bytes [from, from + length) (clipped to the stream), in
 * order: `each(fileOffset, length)` for each; stops early when `each` returns false.
 */
function eachStreamPart(
  stream: AuxStream,
  from: number,
  length: number,
  each: (fileOffset: number, length: number) => boolean,
): void {
  const end = Math.min(stream.size, from + length);
  let rangeStart = 0;
  for (const r of stream.ranges) {
    if (rangeStart >= end) break;
    const rangeEnd = rangeStart + r.size;
    if (rangeEnd > from) {
      const lo = Math.max(from, rangeStart);
      if (!each(r.offset + (lo - rangeStart), Math.min(end, rangeEnd) - lo)) break;
    }
    rangeStart = rangeEnd;
  }
}

/** Up to `length` bytes of the stream from stream offset `from` (a view when they lie in one range). */
export function readStream(source: ByteSource, stream: AuxStream, from: number, length: number): Uint8Array {
  const parts: Uint8Array[] = [];
  eachStreamPart(stream, from, length, (offset, n) => parts.push(source.read(offset, n)) > 0);
  return parts.length === 1 ? parts[0]! : concatBytes(parts);
}

/** A stream's bytes as a trace source (read into the caller's buffers when `source` can). */
export function streamSource(source: ByteSource, stream: AuxStream): TraceSource {
  const readInto = source.readInto;
  return {
    size: stream.size,
    read: (from, length) => readStream(source, stream, from, length),
    readInto:
      readInto === undefined
        ? undefined
        : (from, into, at, length) => {
            let done = 0;
            eachStreamPart(stream, from, length, (offset, n) => {
              const got = readInto.call(source, offset, into, at + done, n);
              done += got;
              return got === n;
            });
            return done;
          },
  };
}

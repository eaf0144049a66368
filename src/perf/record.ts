/** One perf.data record as the reader hands it out: a reusable view, no copy. */

const EMPTY = new Uint8Array(0);

export class PerfRecord {
  /** File offset of the record; for a record inside COMPRESSED, that record's offset. */
  offset = 0;
  /** Offset in the decompressed stream for records inside COMPRESSED, else -1. */
  innerOffset = -1;
  type = 0;
  misc = 0;
  /** perf_event_header.size: the record's bytes, header included (AUXTRACE payload excluded). */
  size = 0;
  /** The record's bytes, header included; valid until the reader's next call. */
  bytes: Uint8Array = EMPTY;
  /** AUXTRACE: file offset of the payload that follows the record, its declared size, and how much of it the file holds. */
  auxOffset = -1;
  auxSize = 0;
  auxAvailable = 0;
}

/**
 * Where perf.data bytes come from. The reader only ever asks for ranges, so a file
 * larger than memory (or than 2 GiB) is read piece by piece; the Node file adapter
 * lives in src/cli, an in-memory one here.
 */
export interface ByteSource {
  /** Total size in bytes (offsets are Numbers: exact up to 2^53). */
  readonly size: number;
  /** `length` bytes at `offset`; readers never ask for bytes outside [0, size). */
  read(offset: number, length: number): Uint8Array;
  /**
   * Read `length` bytes at `offset` into `into` from index `at`: the bytes read (fewer
   * only at the end). Optional: for sources that would otherwise make a fresh buffer.
   */
  readInto?(offset: number, into: Uint8Array, at: number, length: number): number;
}

/** A {@link ByteSource} over bytes already in memory. */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
  };
}

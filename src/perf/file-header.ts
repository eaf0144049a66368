/**
 * The perf.data file header (struct perf_file_header) and the pipe header that
 * starts `perf record -o -` output. Only little-endian PERFILE2 data is read.
 */
import { u32, u64n } from "./bytes.js";
import { PerfError } from "./errors.js";

/** "PERFILE2" read as two little-endian u32 halves. */
const MAGIC_LO = 0x46524550;
const MAGIC_HI = 0x32454c49;
export const FILE_HEADER_SIZE = 104;
export const PIPE_HEADER_SIZE = 16;

export interface FileSection {
  offset: number;
  size: number;
}

export interface PerfFileHeader {
  pipe: boolean;
  /** A headerless record stream (libipt's pevent sideband files): no header, attrs or features. */
  raw: boolean;
  /** The header's own size field. */
  size: number;
  /** Bytes per perf_file_attr entry: the attr plus its ids section. */
  attrSize: number;
  attrs: FileSection;
  data: FileSection;
  /** Feature ids whose bit is set, ascending. */
  features: number[];
}

/** Parse the first bytes of a perf.data file or stream; throws PerfError when it is neither. */
export function parseFileHeader(b: Uint8Array): PerfFileHeader {
  if (b.length < PIPE_HEADER_SIZE) throw new PerfError(0, `not a perf.data file: only ${b.length} bytes`);
  const lo = u32(b, 0);
  const hi = u32(b, 4);
  if (lo !== MAGIC_LO || hi !== MAGIC_HI) {
    if (lo === 0x494c4532 && hi === 0x50455246) {
      throw new PerfError(0, "big-endian perf.data (written on another architecture) is not supported");
    }
    if (lo === MAGIC_LO && hi === 0x454c4946)
      throw new PerfError(0, "version 1 perf.data (PERFFILE) is not supported");
    throw new PerfError(0, "not a perf.data file: bad magic");
  }
  const size = u64n(b, 8);
  if (size === PIPE_HEADER_SIZE)
    return { pipe: true, raw: false, size, attrSize: 0, attrs: none(), data: none(), features: [] };
  if (b.length < FILE_HEADER_SIZE)
    throw new PerfError(0, `perf.data header cut short: ${b.length} of 104 bytes`);
  if (size < FILE_HEADER_SIZE) throw new PerfError(8, `perf.data header size ${size} is smaller than 104`);
  const features: number[] = [];
  for (let word = 0; word < 8; word++) {
    const bits = u32(b, 72 + word * 4);
    for (let bit = 0; bit < 32; bit++) if ((bits >>> bit) & 1) features.push(word * 32 + bit);
  }
  return {
    pipe: false,
    raw: false,
    size,
    attrSize: u64n(b, 16),
    attrs: { offset: u64n(b, 24), size: u64n(b, 32) },
    data: { offset: u64n(b, 40), size: u64n(b, 48) },
    features,
  };
}

/** The header a headerless record stream of `size` bytes has: all data. */
export function rawHeader(size: number): PerfFileHeader {
  return {
    pipe: false,
    raw: true,
    size: 0,
    attrSize: 0,
    attrs: none(),
    data: { offset: 0, size },
    features: [],
  };
}

function none(): FileSection {
  return { offset: 0, size: 0 };
}

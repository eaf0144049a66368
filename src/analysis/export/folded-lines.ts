/** The text of folded stacks' lines, from their paths (see folded-paths.ts). */
import type { KeyTable } from "../key-table.js";
import { ByteChunks, type ChunkOut, putBytes, putDecimal } from "./byte-chunks.js";
import { EMPTY } from "./folded-paths.js";
import type { FrameNames } from "./frame-names.js";

/**
 * The folded lines of paths `order[0..lines)` (path id + 1; 0: the empty path) with
 * weights `sums` (by the same index), paths being `pathTable`'s (path above + 1, name),
 * a buffer's worth at a time (see {@link LineWriter.fill}).
 */
export function writeLines(
  out: ChunkOut,
  names: FrameNames,
  pathTable: KeyTable,
  sums: Float64Array,
  order: Uint32Array,
  lines: number,
): void {
  const text = new ByteChunks(out);
  const writer = new LineWriter(names, pathTable, sums, order);
  // The most bytes a line takes: its path, a space, up to 16 digits and a line feed.
  const most = writer.maxLength + 18;
  for (let i = writer.fill(text, 0, lines, most); i < lines; i = writer.fill(text, i, lines, most))
    text.reserve(2 * most); // the full part goes out
  text.flush();
}

/**
 * Lines come in order of first appearance, so a line mostly starts as the one before:
 * `line` holds that one's text and `ends` where each of its frames ends, and only the
 * frames below the two paths' common ancestor are walked and copied. The buffers are
 * made as large as the deepest and longest path at once, and the text's buffer is
 * filled only while a line surely fits (the caller sends it out): a loop without
 * growth or flush branches is compiled once (a branch first taken after V8 optimised
 * the loop throws the optimised code away).
 */
class LineWriter {
  readonly maxLength: number;
  private readonly keys: Uint32Array;
  private readonly depthOf: Int32Array;
  private readonly line: Uint8Array;
  private readonly ends: Int32Array;
  private readonly below: Int32Array;
  /** The path of the last line written. */
  private last = EMPTY;

  constructor(
    private readonly names: FrameNames,
    pathTable: KeyTable,
    private readonly sums: Float64Array,
    private readonly order: Uint32Array,
  ) {
    const shape = new PathShape(names, pathTable);
    this.keys = pathTable.keys;
    this.depthOf = shape.depthOf;
    this.maxLength = shape.maxLength;
    this.line = new Uint8Array(shape.maxLength);
    this.ends = new Int32Array(shape.maxDepth);
    this.below = new Int32Array(shape.maxDepth);
  }

  /** Lines `i`.. up to `lines` while `most` bytes fit in `text`'s buffer: the line it stopped at. */
  fill(text: ByteChunks, i: number, lines: number, most: number): number {
    const { names, keys, depthOf, line, ends, below, sums, order } = this;
    let last = this.last;
    for (; i < lines; i++) {
      const at = order[i]!;
      const rounded = Math.round(sums[at]!);
      if (!(rounded > 0)) continue;
      if (text.free < most) break;
      // Up from this path and the last line's to where they meet, this one's frames kept.
      let a = at - 1;
      let b = last;
      let da = a === EMPTY ? 0 : depthOf[a]!;
      let db = b === EMPTY ? 0 : depthOf[b]!;
      let n = 0;
      while (a !== b) {
        if (da >= db) {
          below[n++] = a;
          a = keys[4 * a]! - 1;
          da--;
        } else {
          b = keys[4 * b]! - 1;
          db--;
        }
      }
      let end = da > 0 ? ends[da - 1]! : 0;
      while (n > 0) {
        const p = below[--n]!;
        names.nameBytes(keys[4 * p + 1]!);
        const { arena, start, length } = names;
        if (depthOf[p]! > 1) line[end++] = 0x3b; // ;
        for (let j = 0; j < length; j++) line[end + j] = arena[start + j]!;
        end += length;
        ends[depthOf[p]! - 1] = end;
      }
      last = at - 1;
      if (rounded > Number.MAX_SAFE_INTEGER) {
        // Digits as String() writes them (never for real weights).
        text.slice(line, 0, end);
        text.byte(0x20);
        text.int(rounded);
        text.byte(0x0a);
        continue;
      }
      let o = text.reserve(end + 18);
      const out = text.buffer;
      o = putBytes(out, o, line, 0, end);
      out[o++] = 0x20;
      o = putDecimal(out, o, rounded);
      out[o++] = 0x0a;
      text.wrote(o);
    }
    this.last = last;
    return i;
  }
}

/** Each path's frame count, and the most frames and bytes of a path (see {@link writeLines}). */
class PathShape {
  readonly depthOf: Int32Array;
  maxDepth = 0;
  maxLength = 0;

  constructor(names: FrameNames, pathTable: KeyTable) {
    const keys = pathTable.keys;
    const n = pathTable.size;
    const depthOf = new Int32Array(n);
    const lengthOf = new Float64Array(n);
    let maxDepth = 0;
    let maxLength = 0;
    // A path comes after the one above it.
    for (let p = 0; p < n; p++) {
      const above = keys[4 * p]! - 1;
      names.nameBytes(keys[4 * p + 1]!);
      const depth = above === EMPTY ? 1 : depthOf[above]! + 1;
      const length = above === EMPTY ? names.length : lengthOf[above]! + 1 + names.length;
      depthOf[p] = depth;
      lengthOf[p] = length;
      if (depth > maxDepth) maxDepth = depth;
      if (length > maxLength) maxLength = length;
    }
    this.depthOf = depthOf;
    this.maxDepth = maxDepth;
    this.maxLength = maxLength;
  }
}

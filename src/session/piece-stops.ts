/**
 * Where the decode of a `--jobs` piece notes what it made (flow-pieces.ts for the
 * flow, count-pieces.ts for the instruction count): at the first PSB after its own
 * (the prefix: the next piece's overlap must match it), at the first PSB at or after
 * the piece's end (the seam: the piece's own part ends there), and at the PSB after
 * that (the overlap's end: the decode stops). The decoder calls {@link reached} at
 * each PSB at or after {@link stop}.
 */
export class PieceStops<M> {
  /** The offset from which the decoder calls {@link reached} next. */
  stop: number;
  /** What was made at the end of the piece's first PSB segment. */
  prefix: M | undefined;
  /** What was made at the seam, and its PSB (-1: the decode went to the end first). */
  seam: M | undefined;
  seamPsb = -1;

  /** For a piece that ends at `end` (relative, > 0). */
  constructor(private readonly end: number) {
    this.stop = Math.min(1, end);
  }

  /** The decoder is at the PSB at `psb` (at or after {@link stop}); `mark` says what it made: whether it goes on. */
  reached(psb: number, mark: () => M): boolean {
    if (this.seamPsb >= 0) return false;
    const made = mark();
    if (this.prefix === undefined) this.prefix = made;
    if (psb < this.end) {
      this.stop = this.end;
      return true;
    }
    this.seam = made;
    this.seamPsb = psb;
    this.stop = psb + 1;
    return true;
  }
}

/**
 * Text handed to a writer callback in chunks of about 64 KiB: exports of millions of
 * records never build one big string, and the writer is not called per record. (The
 * CLI's LineWriter does the same for stdout; the analysis layer cannot import the CLI.)
 */
export class TextChunks {
  /** Pending text: appending builds a rope that is flattened once per chunk. */
  private pending = "";

  constructor(private readonly out: (chunk: string) => void) {}

  write(text: string): void {
    this.pending += text;
    if (this.pending.length >= 1 << 16) this.flush();
  }

  flush(): void {
    if (this.pending.length === 0) return;
    this.out(this.pending);
    this.pending = "";
  }
}

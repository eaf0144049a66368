/**
 * perf.data problems. Bad input is normal input: the reader reports what it cannot
 * use as a {@link PerfDiagnostic} and goes on where it can; it throws a
 * {@link PerfError} only when nothing can be read at all (not a perf.data file).
 */

/** One problem found in a perf.data file, at a file offset. */
export interface PerfDiagnostic {
  /** File offset of the record or structure concerned. */
  offset: number;
  message: string;
}

/** Thrown by the perf.data reader, naming the file offset. */
export class PerfError extends Error {
  readonly offset: number;

  constructor(offset: number, message: string) {
    super(`${message} at offset 0x${offset.toString(16)}`);
    this.name = "PerfError";
    this.offset = offset;
  }
}

/** The text of a diagnostic, `[offset: message]` like ptdump's error lines. */
export function diagnosticText(d: PerfDiagnostic): string {
  return `[${d.offset.toString(16)}: ${d.message}]`;
}

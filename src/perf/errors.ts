/**
 * perf.data problems. Bad input is normal input: the reader reports what it cannot
 * use as a {@link PerfDiagnostic} and goes on where it can; it throws a
 * {@link PerfError} only when nothing can be read at all (not a perf.data file).
 * Both are the base layer's diagnostic types.
 */
import { type Diagnostic, FileDiagnostic } from "../base/diagnostic.js";
import { ErrorCode } from "../base/errors.js";

/** One problem found in a perf.data file, at a file offset. */
export type PerfDiagnostic = Diagnostic;

/** Thrown by the perf.data reader: a {@link FileDiagnostic} (BadFile) naming the file offset. */
export class PerfError extends FileDiagnostic {
  constructor(offset: number, message: string, hint?: string) {
    super(ErrorCode.BadFile, offset, message, hint);
    this.name = "PerfError";
  }
}

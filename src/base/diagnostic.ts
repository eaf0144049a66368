/**
 * What every file reader reports about bad input: one problem at a byte offset of the
 * file, what is wrong, and what to do when the reader knows. Bad input is normal
 * input: a reader that can go on past a problem collects {@link Diagnostic} records;
 * one that cannot throws a {@link FileDiagnostic} (or a subclass: PtError, ElfError,
 * PerfError). Front ends print them with {@link diagnosticLine} (a one-line error
 * naming the file) or {@link diagnosticText} (a line inside a listing, as ptdump's).
 */
import type { ErrorCode } from "./errors.js";

/** One problem in a file. */
export interface Diagnostic {
  /** Byte offset in the file of the record or field concerned. */
  readonly offset: number;
  /** What is wrong, without the offset. */
  readonly message: string;
  /** What to do about it, when the reader knows. */
  readonly hint?: string | undefined;
}

/** `0x1c`: offsets are printed in lower-case hex. */
function offsetHex(offset: number): string {
  return `0x${offset.toString(16)}`;
}

/** `what at offset 0x1c` or `what at offset 0x1c: what to do`: a diagnostic without its file. */
export function diagnosticMessage(d: Diagnostic): string {
  return `${d.message} at offset ${offsetHex(d.offset)}${d.hint ? `: ${d.hint}` : ""}`;
}

/**
 * The one-line error a front end prints: `FILE: what at offset 0x1c: what to do`.
 * A {@link FileDiagnostic} gives its message as it was thrown (a PtError's names its
 * libipt error too).
 */
export function diagnosticLine(file: string, d: Diagnostic | FileDiagnostic): string {
  return `${file}: ${d instanceof FileDiagnostic ? d.message : diagnosticMessage(d)}`;
}

/** `[1c: what]`: a diagnostic inside a listing, like ptdump's error lines. */
export function diagnosticText(d: Diagnostic): string {
  return `[${d.offset.toString(16)}: ${d.message}]`;
}

/** A file a reader cannot go on with, at a byte offset. Thrown only at API edges, never in hot loops. */
export class FileDiagnostic extends Error {
  readonly code: ErrorCode;
  readonly offset: number;
  /** What is wrong, without the offset (the message is `problem at offset 0x…[: hint]`). */
  readonly problem: string;
  readonly hint: string | undefined;

  constructor(code: number, offset: number, problem: string, hint?: string) {
    super(diagnosticMessage({ offset, message: problem, hint }));
    this.name = "FileDiagnostic";
    this.code = (code < 0 ? -code : code) as ErrorCode;
    this.offset = offset;
    this.problem = problem;
    this.hint = hint;
  }

  /** The problem as a record, for readers' and front ends' diagnostic lists. */
  get diagnostic(): Diagnostic {
    return { offset: this.offset, message: this.problem, hint: this.hint };
  }
}

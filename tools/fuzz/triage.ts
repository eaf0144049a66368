/**
 * What a failed case says about ptkit, and when two failures are the same bug: the
 * signature is the error type and the top stack frame for exceptions (wherever they
 * surfaced), or the kind and format for hangs, memory blow-ups, crashes and output
 * that depends on bytes past the declared end.
 */

export type FailureKind =
  /** `ptkit` exit code 70: an exception the command did not turn into a message. */
  | "internal"
  /** A library call threw something other than its layer's error class. */
  | "uncaught"
  /** A JS stack trace in the output of a command that did not exit 70. */
  | "stack"
  /** No result within the per-case timeout. */
  | "hang"
  /** RSS above the limit, or V8 ran out of heap. */
  | "oom"
  /** The process died otherwise (a signal, an abort). */
  | "crash"
  /** Output changed when only bytes past the declared end of the input changed. */
  | "past-end";

export interface Failure {
  format: string;
  kind: FailureKind;
  /** Error text with its stack (internal, uncaught, stack), or what was seen. */
  detail: string;
}

/** The error type and top frame of a stack in `text`, e.g. `RangeError at toBig (time-conv.js:42)`. */
export function stackSignature(text: string): string {
  const lines = text.split("\n");
  let type = "non-Error";
  for (const line of lines) {
    const m = /\b((?:[A-Z]\w*)?(?:Error|Exception))\b/.exec(line);
    if (m) {
      type = m[1]!;
      break;
    }
  }
  for (const line of lines) {
    const m = /^\s+at (?:(.+?) \()?(?:.*[/\\])?([^/\\():]+):(\d+):\d+\)?\s*$/.exec(line);
    if (m) return `${type} at ${m[1] ?? "<anonymous>"} (${m[2]}:${m[3]})`;
  }
  return type;
}

/** The deduplication key of a failure. */
export function signatureOf(f: Failure): string {
  switch (f.kind) {
    case "internal":
    case "uncaught":
    case "stack":
      return stackSignature(f.detail);
    default:
      return `${f.kind}: ${f.format}`;
  }
}

/** A file-name-safe form of a signature. */
export function slug(signature: string): string {
  return signature
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 100);
}

export interface Distinct {
  signature: string;
  first: Failure;
  /** How many cases failed this way, per format. */
  counts: Map<string, number>;
}

/** Failures grouped by signature, in the order first seen. */
export class Triage {
  private readonly bySignature = new Map<string, Distinct>();

  /** Record a failure; returns its group, `isNew` when the signature was not seen before. */
  add(f: Failure): { distinct: Distinct; isNew: boolean } {
    const signature = signatureOf(f);
    let distinct = this.bySignature.get(signature);
    const isNew = distinct === undefined;
    if (distinct === undefined) {
      distinct = { signature, first: f, counts: new Map() };
      this.bySignature.set(signature, distinct);
    }
    distinct.counts.set(f.format, (distinct.counts.get(f.format) ?? 0) + 1);
    return { distinct, isNew };
  }

  get size(): number {
    return this.bySignature.size;
  }

  list(): Distinct[] {
    return [...this.bySignature.values()];
  }
}

/** Whether text holds a JS stack frame line (what users must never see). */
export function hasStack(text: string): boolean {
  return /^\s+at .+:\d+:\d+\)?\s*$/m.test(text);
}

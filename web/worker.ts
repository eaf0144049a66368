/**
 * The web app's decoding worker: the session layer's perf.data pipeline (perfAnswers),
 * or its raw-trace pipeline (rawAnswers), over the files the page hands in, read a
 * slice at a time (FileReaderSync: a 100 MB perf.data is never held whole), so the
 * page never freezes. Reports progress as the share of the trace decoded so far (of
 * a raw trace: read so far).
 */
import { Demangler } from "../src/analysis/index.js";
import { initIsa } from "../src/isa/index.js";
import type { ByteSource } from "../src/perf/index.js";
import {
  FilesIo,
  type InputHints,
  type PerfAnswers,
  perfAnswers,
  rawAnswers,
  SHOWN_ROWS,
  timelineBoundFor,
} from "../src/session/index.js";
import type { DecodeRequest, WorkerMessage } from "./protocol.js";

declare class FileReaderSync {
  readAsArrayBuffer(blob: Blob): ArrayBuffer;
}

interface WorkerScope {
  onmessage: ((e: MessageEvent<DecodeRequest>) => void) | null;
  postMessage(message: WorkerMessage, transfer?: Transferable[]): void;
}
const scope = globalThis as unknown as WorkerScope;

/** Progress messages at most this often (ms). */
const PROGRESS_EVERY = 100;

function fileSource(file: File): ByteSource {
  const reader = new FileReaderSync();
  return {
    size: file.size,
    read: (offset, length) => new Uint8Array(reader.readAsArrayBuffer(file.slice(offset, offset + length))),
  };
}

/** The demangler, when its module can be fetched (names stay mangled otherwise). */
async function loadDemangler(): Promise<Demangler | undefined> {
  try {
    const res = await fetch(new URL("gecko-profiler-demangle.wasm", import.meta.url));
    return res.ok ? await Demangler.instantiate(await res.arrayBuffer()) : undefined;
  } catch {
    return undefined;
  }
}

const ready = Promise.all([initIsa(), loadDemangler()]);

/** The session's remedies in the page's words: its form's fields (web/index.html). */
const PAGE_HINTS: InputHints = {
  nomFreq: "the Nominal frequency field",
  elfNotTrace: () => "choose the trace in the Trace field; ELF files are the code it ran",
};

scope.onmessage = async (e) => {
  const request = e.data;
  const { files } = request;
  try {
    const [, demangler] = await ready;
    const start = performance.now();
    const io = new FilesIo();
    let last = 0;
    const progress = (done: number, total: number) => {
      const now = performance.now();
      if (now - last < PROGRESS_EVERY) return;
      last = now;
      scope.postMessage({ kind: "progress", done, total });
    };
    const input = request.kind === "perf" ? request.perfData : request.trace;
    for (const f of files) {
      const source = fileSource(f);
      // A raw trace is read once, front to back: how far the reads are is how far the decode is.
      io.add(f.name, request.kind === "raw" && f.name === input ? readProgress(source, progress) : source);
    }
    const timelineMinDuration = timelineBoundFor(files.find((f) => f.name === input)?.size ?? 0);
    let answers: PerfAnswers;
    if (request.kind === "perf") {
      const binaries = files.map((f) => f.name).filter((n) => n !== input);
      answers = perfAnswers(io, input, binaries, { demangler, timelineMinDuration, progress });
    } else
      answers = await rawAnswers(io, input, request.code, request.settings, {
        demangler,
        timelineMinDuration,
        hints: PAGE_HINTS,
      });
    // The page lists the first SHOWN_ROWS functions' blocks: the rest stay here (fewer objects to clone in the page's thread).
    answers.coverage = answers.coverage.map((r, i) => (i < SHOWN_ROWS ? r : { ...r, list: [] }));
    // Each chunk is a copy with a buffer of its own: hand them over rather than copy them again.
    const buffers = Object.values(answers.files).flatMap((chunks) =>
      chunks.map((c) => c.buffer as ArrayBuffer),
    );
    scope.postMessage({ kind: "done", answers, timelineMinDuration, ms: performance.now() - start }, buffers);
  } catch (err) {
    scope.postMessage({ kind: "failed", message: err instanceof Error ? err.message : String(err) });
  }
};

/** `source`, telling `progress` how far into it each read ends. */
function readProgress(source: ByteSource, progress: (done: number, total: number) => void): ByteSource {
  return {
    size: source.size,
    read: (offset, length) => {
      progress(Math.min(offset + length, source.size), source.size);
      return source.read(offset, length);
    },
  };
}

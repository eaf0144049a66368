/** The files of perf-answers.ts and how it names functions, in a module of their own: the web page uses them without loading the pipeline. */

/** The output files, by what they hold (paths in the FilesIo; also the download names). */
export const ANSWER_FILES = {
  timeline: "timeline.json",
  folded: "folded.txt",
  coverage: "coverage.json",
  aflMap: "afl-map.bin",
  latency: "latency.json",
  /** Annotated disassembly (annotate.ts), made from the coverage after the decode. */
  annotate: "annotate.txt",
} as const;

export type AnswerFile = keyof typeof ANSWER_FILES;

/** The function a coverage block's symbol (`name` or `name+0xoff`) is in. */
export const blockFunction = (symbol: string | undefined): string =>
  symbol ? symbol.replace(/\+0x[0-9a-f]+$/, "") : "[unknown]";

/** Rows of the web app's tables (its worker sends no more coverage blocks than these rows have). */
export const SHOWN_ROWS = 200;

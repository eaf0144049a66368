/** The files of perf-answers.ts, in a module of their own: the web page names them without loading the pipeline. */

/** The output files, by what they hold (paths in the FilesIo; also the download names). */
export const ANSWER_FILES = {
  timeline: "timeline.json",
  folded: "folded.txt",
  coverage: "coverage.json",
  aflMap: "afl-map.bin",
  latency: "latency.json",
} as const;

export type AnswerFile = keyof typeof ANSWER_FILES;

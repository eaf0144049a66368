/**
 * ptkit/node: the Node adapters of the library, the one layer besides the CLI that
 * touches files and processes: a {@link SessionIo} over the file system, perf.data
 * files and stdin as byte sources, the demangler's WebAssembly read from disk,
 * valgrind's lackey, source lines through an installed tool, and DuckDB. The CLI, the
 * benchmarks and the tools use these; the layers below never do.
 */
export { nowMs } from "./clock.js";
export { contentType } from "./content-type.js";
export { demanglerWasmPath, loadDemangler } from "./demangle-loader.js";
export { type QueryResult, queryDatabase, sqlString, writeDatabase } from "./duckdb.js";
export { CACHE_BYTES, FileGraphStore, graphStoreFromEnv } from "./graph-store.js";
export { nodeIo, regularFileSize } from "./io.js";
export { fileSource, readStdin } from "./source.js";
export {
  findSourceLineTool,
  SOURCE_LINE_HINT,
  SOURCE_LINE_TOOLS,
  type SourceFrame,
  SourceLines,
  type SourceLineTool,
} from "./srcline.js";
export {
  LACKEY_OPTIONS,
  type LackeyRun,
  runUnderLackey,
  VALGRIND_HINT,
  valgrindVersion,
} from "./valgrind.js";

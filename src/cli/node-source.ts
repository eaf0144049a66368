/** perf.data files as a {@link ByteSource} through the command's {@link CliIo}: read a range at a time. */
import type { ByteSource } from "../perf/index.js";
import type { CliIo } from "./io.js";

/** A ByteSource over the file at `path`; throws like CliIo.fileSize when it cannot be read. */
export function fileSource(io: CliIo, path: string): ByteSource {
  const size = io.fileSize(path);
  return { size, read: (offset, length) => io.readRange(path, offset, Math.min(length, size - offset)) };
}

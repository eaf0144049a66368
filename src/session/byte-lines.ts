/**
 * Lines to stdout as UTF-8 bytes in chunks of about 64 KiB, for outputs of millions of
 * lines made mostly of addresses (`ptkit perf`'s listings): those are written as
 * digits in place ({@link ByteChunks.hex64}), no string made per line. Its own module:
 * commands that print no such lines do not load the analysis layer's writer.
 */
import { ByteChunks, immediate } from "../analysis/export/byte-chunks.js";
import { type Lines, type SessionIo, writeStdoutBytes } from "./io.js";

export class ByteLines extends ByteChunks implements Lines {
  constructor(io: SessionIo) {
    // Written (or decoded to text) before the call returns: one buffer serves.
    super(immediate((bytes) => writeStdoutBytes(io, bytes)));
  }

  line(text: string): void {
    this.text(text);
    this.byte(0x0a);
  }
}

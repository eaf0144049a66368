/**
 * What a command needs from its surroundings. The real process provides it in
 * main.ts; tests provide an in-memory one, so commands run in-process.
 */
export interface CliIo {
  /** Directory that relative paths are resolved against. */
  cwd: string;
  readFile(path: string): Uint8Array;
  /**
   * Size of a file in bytes. Throws like readFile when it cannot be read, and with
   * code EISDIR or {@link NOT_REGULAR} when the path is not a regular file.
   */
  fileSize(path: string): number;
  /** Read `length` bytes at `offset` of a file. */
  readRange(path: string, offset: number, length: number): Uint8Array;
  /** Create or replace a file. */
  writeFile(path: string, bytes: Uint8Array): void;
  /** Create or replace a file to write in parts (outputs too large for one string); throws like writeFile. */
  openWrite(path: string): FileWriter;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal (progress is shown only then). */
  stderrIsTty: boolean;
}

/** The error code of CliIo.fileSize for a path that is neither a regular file nor a directory. */
export const NOT_REGULAR = "ENOTREGULAR";

/** A file being written: chunks in order, then close. */
export interface FileWriter {
  write(chunk: string | Uint8Array): void;
  close(): void;
}

/**
 * Collects output lines and hands them to the sink in large chunks: one write per
 * line is the slowest part of dumping millions of packets.
 */
export class LineWriter {
  private parts: string[] = [];
  private length = 0;

  constructor(private readonly sink: (text: string) => void) {}

  line(text: string): void {
    this.parts.push(text, "\n");
    this.length += text.length + 1;
    if (this.length >= 1 << 16) this.flush();
  }

  flush(): void {
    if (this.parts.length === 0) return;
    this.sink(this.parts.join(""));
    this.parts = [];
    this.length = 0;
  }
}

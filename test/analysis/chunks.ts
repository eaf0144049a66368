/** Collects an export's UTF-8 chunks (a ChunkOut) and reads them back as text. */
export class Chunks {
  readonly parts: Uint8Array[] = [];
  readonly out = (chunk: Uint8Array): void => {
    this.parts.push(chunk);
  };
  text(): string {
    return Buffer.concat(this.parts).toString("utf8");
  }
}

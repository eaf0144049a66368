/**
 * A one-line progress bar on stderr, shown only when stderr is a terminal (never in
 * pipes or files); redrawn at most every 100 ms.
 */

import { nowMs } from "../node/clock.js";
import type { SessionIo } from "../session/io.js";

export class Progress {
  private shown = false;
  private lastDraw = 0;

  constructor(
    private readonly io: SessionIo,
    private readonly label: string,
    private readonly total: number,
  ) {}

  update(done: number): void {
    if (!this.io.stderrIsTty || this.total <= 0) return;
    const now = nowMs();
    if (now - this.lastDraw < 100) return;
    this.lastDraw = now;
    const frac = Math.min(1, done / this.total);
    const width = 30;
    const filled = Math.round(frac * width);
    this.io.stderr(
      `\r${this.label} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${(frac * 100).toFixed(0)}%`,
    );
    this.shown = true;
  }

  /** Show `text` in place of the bar, for work whose progress cannot be measured. */
  status(text: string): void {
    if (!this.io.stderrIsTty) return;
    this.io.stderr(`\r\x1b[K${text}`);
    this.shown = true;
  }

  done(): void {
    if (this.shown) this.io.stderr("\r\x1b[K");
    this.shown = false;
  }
}

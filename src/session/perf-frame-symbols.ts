/**
 * The symbols of every process of a perf.data file, each process image in its own
 * {@link Symbolizer} (its binaries' tables at their load biases, and the kernel's):
 * two processes often map different binaries at the same addresses (non-PIE programs
 * at 0x400000), and a process that execs gets a new image. An image is known by its
 * pid and the task change that began it (exec or fork; -1 for the image the process
 * had when recording began), so every stream's replay of the sideband
 * (ProcessImages, perf-images.ts) fills the same symbolizer, and {@link current} gives the one
 * of the latest image reached, which names the frames of `ptkit perf`'s analysis.
 */
import { type NameDemangler, Symbolizer, type SymbolTable } from "../analysis/index.js";

export class AllProcessSymbols {
  /** The kernel's symbols alone: for threads of no known process (the idle task, unknown threads). */
  readonly kernelOnly: Symbolizer;
  private readonly kernel: readonly SymbolTable[];
  private readonly demangler: NameDemangler | undefined;
  private readonly images = new Map<string, Symbolizer>();
  /** Per pid: the latest image made and the change that began it. */
  private readonly latest = new Map<number, { start: number; symbols: Symbolizer }>();

  constructor(options: { kernel?: readonly SymbolTable[]; demangler?: NameDemangler } = {}) {
    this.kernel = options.kernel ?? [];
    this.demangler = options.demangler;
    this.kernelOnly = this.made();
  }

  /** The symbols of process `pid`'s image begun by task change `start` (-1: before recording), made once. */
  image(pid: number, start: number): Symbolizer {
    const key = `${pid}:${start}`;
    let s = this.images.get(key);
    if (s === undefined) {
      s = this.made();
      this.images.set(key, s);
    }
    const last = this.latest.get(pid);
    if (last === undefined || start > last.start) this.latest.set(pid, { start, symbols: s });
    return s;
  }

  /**
   * The kernel's symbols, then every process image's in the order the replays made
   * them: what names an address whose process is not known (coverage blocks), the
   * same whatever the analysis looked at before.
   */
  all(): Symbolizer[] {
    return [this.kernelOnly, ...this.images.values()];
  }

  /** The symbols of `pid`'s latest image any replay has reached; undefined when none has. */
  current(pid: number): Symbolizer | undefined {
    return this.latest.get(pid)?.symbols;
  }

  private made(): Symbolizer {
    const s = new Symbolizer({ demangler: this.demangler });
    for (const t of this.kernel) s.add(t);
    return s;
  }
}

/**
 * Who runs on a CPU by its CR3, for perf.data files recorded without context-switch
 * records. perf itself then keeps the thread ITRACE_START named until something
 * says otherwise, and decodes another process's code against the wrong binaries.
 * Instead, each CR3 a PIP announces is bound to the thread seen running with it
 * (ITRACE_START, or the sample_id of an MMAP/MMAP2/COMM record the thread caused on
 * this CPU); a PIP to a bound CR3 switches to its thread, a PIP to an unknown one to
 * nobody (pid and tid -1: kernel code only) until a thread is seen with it.
 */
import type { PerfWhere } from "./perf-stream.js";

interface Thread {
  pid: number;
  tid: number;
}

export class Cr3Threads {
  private readonly threads = new Map<number, Thread>();
  /** The current CR3 (exact: CR3 values are below 2^52), -1 before the first PIP. */
  private cr3 = -1;

  /** Thread pid/tid was seen running now, with the current CR3. */
  seen(pid: number, tid: number): void {
    if (this.cr3 >= 0) this.threads.set(this.cr3, { pid, tid });
  }

  /**
   * A PIP (or a PSB+'s status) says the CR3 is hi:lo: bind it to the running thread if
   * this is the first CR3, else make its thread (or nobody) the running one in
   * `where`. True when `where` changed.
   */
  paging(hi: number, lo: number, where: PerfWhere): boolean {
    const cr3 = hi * 0x1_0000_0000 + lo;
    if (cr3 === this.cr3) return false;
    const first = this.cr3 < 0;
    this.cr3 = cr3;
    const known = this.threads.get(cr3);
    if (!known) {
      if (first || where.pid < 0) {
        if (where.pid >= 0) this.threads.set(cr3, { pid: where.pid, tid: where.tid });
        return false;
      }
      where.pid = where.tid = -1;
      return true;
    }
    if (known.pid === where.pid && known.tid === where.tid) return false;
    where.pid = known.pid;
    where.tid = known.tid;
    return true;
  }
}

/**
 * The N slowest calls of a trace: a bounded min-heap over typed arrays, its root the
 * least slow call kept, so a call that is not among the slowest costs one comparison.
 * A call that gets in copies its stack (the only allocation, and it stops once the
 * kept calls are slow: in a trace of n calls in random order, about N ln(n/N) get in).
 *
 * Slower means a longer duration; of equal ones, the earlier start, then the call that
 * returned first, so which calls are kept does not depend on anything but the trace.
 */
import type { ThreadTrack } from "./callstack-sink.js";

/** One kept call, as {@link SlowestCalls.sorted} gives them. */
export interface KeptCall {
  duration: number;
  start: number;
  offCpu: number;
  /** The function id of the call. */
  fn: number;
  track: ThreadTrack;
  /** Function ids of the frames from the bottom of the stack to the call itself. */
  stack: Int32Array;
}

export class SlowestCalls {
  /** Calls kept (at most `capacity`). */
  size = 0;
  /** Slot data; `heap` orders the slots. */
  private readonly duration: Float64Array;
  private readonly start: Float64Array;
  private readonly order: Float64Array;
  private readonly offCpu: Float64Array;
  private readonly fn: Int32Array;
  private readonly tracks: (ThreadTrack | undefined)[];
  private readonly stacks: Int32Array[];
  /** heap[0] is the slot of the least slow call kept. */
  private readonly heap: Int32Array;

  constructor(readonly capacity: number) {
    this.duration = new Float64Array(capacity);
    this.start = new Float64Array(capacity);
    this.order = new Float64Array(capacity);
    this.offCpu = new Float64Array(capacity);
    this.fn = new Int32Array(capacity);
    this.tracks = new Array<ThreadTrack | undefined>(capacity).fill(undefined);
    this.stacks = new Array<Int32Array>(capacity).fill(new Int32Array(0));
    this.heap = new Int32Array(capacity);
  }

  /**
   * Whether a call of `duration` that started at `start` and returned as the
   * `order`-th would be kept: then {@link add} it.
   */
  wants(duration: number, start: number, order: number): boolean {
    if (this.size < this.capacity) return this.capacity > 0;
    return this.slower(duration, start, order, this.heap[0]!);
  }

  /** Keep a call that {@link wants} said yes to; `stack` holds its frames' functions, bottom first, `depth` of them. */
  add(
    duration: number,
    start: number,
    order: number,
    offCpu: number,
    fn: number,
    track: ThreadTrack,
    stack: Int32Array,
    depth: number,
  ): void {
    let slot: number;
    let at: number;
    if (this.size < this.capacity) {
      slot = this.size;
      at = this.size++;
    } else {
      slot = this.heap[0]!;
      at = 0;
    }
    this.duration[slot] = duration;
    this.start[slot] = start;
    this.order[slot] = order;
    this.offCpu[slot] = offCpu;
    this.fn[slot] = fn;
    this.tracks[slot] = track;
    this.stacks[slot] = stack.slice(0, depth);
    this.heap[at] = slot;
    if (at > 0) this.up(at);
    else this.down(0);
  }

  /** The kept calls, slowest first. */
  sorted(): KeptCall[] {
    const slots = Array.from(this.heap.subarray(0, this.size));
    slots.sort((a, b) => (this.slowerSlot(a, b) ? -1 : this.slowerSlot(b, a) ? 1 : 0));
    return slots.map((s) => ({
      duration: this.duration[s]!,
      start: this.start[s]!,
      offCpu: this.offCpu[s]!,
      fn: this.fn[s]!,
      track: this.tracks[s]!,
      stack: this.stacks[s]!,
    }));
  }

  /** Whether the call (duration, start, order) is slower than the one in `slot`. */
  private slower(duration: number, start: number, order: number, slot: number): boolean {
    const d = this.duration[slot]!;
    if (duration !== d) return duration > d;
    const s = this.start[slot]!;
    if (start !== s) return start < s;
    return order < this.order[slot]!;
  }

  private slowerSlot(a: number, b: number): boolean {
    return this.slower(this.duration[a]!, this.start[a]!, this.order[a]!, b);
  }

  /** Move the slot at heap position `at` up while it is less slow than its parent. */
  private up(at: number): void {
    const heap = this.heap;
    const slot = heap[at]!;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.slowerSlot(heap[parent]!, slot)) break;
      heap[at] = heap[parent]!;
      at = parent;
    }
    heap[at] = slot;
  }

  /** Move the slot at heap position `at` down while a child is less slow. */
  private down(at: number): void {
    const heap = this.heap;
    const n = this.size;
    const slot = heap[at]!;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && this.slowerSlot(heap[child]!, heap[child + 1]!)) child++;
      if (!this.slowerSlot(slot, heap[child]!)) break;
      heap[at] = heap[child]!;
      at = child;
    }
    heap[at] = slot;
  }
}

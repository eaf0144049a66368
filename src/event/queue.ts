/**
 * Pending events, grouped by the packet that will complete them (libipt's
 * `pt_event_queue`): a MODE.Exec waits for its TIP, a PTWRITE with IP for its FUP,
 * PSB+ status updates for PSBEND, and so on.
 *
 * A ring of 16 preallocated slots. Slots are positions, like the C queue's pointers:
 * taking an event from the middle moves the ones before it up by copying contents,
 * and one slot always stays free so that the event dequeued last is not overwritten
 * by the next enqueue. So at most 14 events wait at a time; one more is -NoMem.
 */
import { type EventType, PtEvent } from "./types.js";

/** What a queued event waits for: bits, so that a lookup can accept several. */
export const Binding = {
  PsbEnd: 1 << 0,
  Tip: 1 << 1,
  /** A FUP that would otherwise be an asynchronous branch source. */
  Fup: 1 << 2,
  /** A FUP that binds to the preceding packet (and is no branch source). */
  FupBound: 1 << 3,
  Exstop: 1 << 4,
  Cfe: 1 << 5,
  Pwrx: 1 << 6,
} as const;

export const ALL_BINDINGS = 0x7f;

const SIZE = 16;
const MASK = SIZE - 1;

export class EventQueue {
  private readonly slots: PtEvent[] = Array.from({ length: SIZE }, () => new PtEvent());
  private readonly binding = new Uint32Array(SIZE);
  private begin = 0;
  private end = 0;
  private readonly spare = new PtEvent();

  clear(): void {
    this.begin = 0;
    this.end = 0;
  }

  copyFrom(other: EventQueue): void {
    this.begin = other.begin;
    this.end = other.end;
    for (let i = other.begin; i !== other.end; i = (i + 1) & MASK) {
      this.slots[i]!.copyFrom(other.slots[i]!);
      this.binding[i] = other.binding[i]!;
    }
  }

  /** A zeroed slot at the end waiting for `evb`, or null when full. */
  enqueue(evb: number): PtEvent | null {
    const idx = this.end;
    const end = (idx + 1) & MASK;
    if (((end + 1) & MASK) === this.begin) return null;
    this.end = end;
    this.binding[idx] = evb;
    return this.slots[idx]!.clear();
  }

  /** Enqueue a copy of `ev` waiting for `evb`, or null when full. */
  requeue(ev: PtEvent, evb: number): PtEvent | null {
    const slot = this.enqueue(evb);
    return slot ? slot.copyFrom(ev) : null;
  }

  /**
   * Remove the oldest event waiting for any of `evb` and return its slot (valid until
   * the second enqueue after this), or null.
   */
  dequeue(evb: number): PtEvent | null {
    const begin = this.begin;
    const end = this.end;
    if (begin === end) return null;
    if ((this.binding[begin]! & evb) !== 0) {
      this.begin = (begin + 1) & MASK;
      return this.slots[begin]!;
    }
    let idx = begin;
    do {
      idx = (idx + 1) & MASK;
      if (idx === end) return null;
    } while ((this.binding[idx]! & evb) === 0);

    // Move the events before it up by one and put it first, then take it.
    const entry = this.spare.copyFrom(this.slots[idx]!);
    const entryBinding = this.binding[idx]!;
    for (; idx !== begin; idx = (idx - 1) & MASK) {
      const prev = (idx - 1) & MASK;
      this.slots[idx]!.copyFrom(this.slots[prev]!);
      this.binding[idx] = this.binding[prev]!;
    }
    this.slots[begin]!.copyFrom(entry);
    this.binding[begin] = entryBinding;
    this.begin = (begin + 1) & MASK;
    return this.slots[begin]!;
  }

  /** Whether no event waits. */
  get empty(): boolean {
    return this.begin === this.end;
  }

  /** Whether any event waits for one of `evb`. */
  pending(evb: number): boolean {
    for (let i = this.begin; i !== this.end; i = (i + 1) & MASK) {
      if ((this.binding[i]! & evb) !== 0) return true;
    }
    return false;
  }

  /** The oldest event of `type` waiting for one of `evb` (left queued), or null. */
  find(evb: number, type: EventType): PtEvent | null {
    for (let i = this.begin; i !== this.end; i = (i + 1) & MASK) {
      const ev = this.slots[i]!;
      if ((this.binding[i]! & evb) !== 0 && ev.type === type) return ev;
    }
    return null;
  }

  /** The oldest event waiting for one of `evb` (left queued), or null. */
  peek(evb: number): PtEvent | null {
    for (let i = this.begin; i !== this.end; i = (i + 1) & MASK) {
      if ((this.binding[i]! & evb) !== 0) return this.slots[i]!;
    }
    return null;
  }
}

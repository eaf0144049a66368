/** Decoder events for feeding a FlowTracker by hand. */
import { type EventType, PtEvent } from "../../src/event/index.js";

/** An event of `type` at IP ipLo (from fromLo for an asynchronous branch), its IP suppressed or not. */
export function event(type: EventType, ipLo = 0, fromLo = 0, ipSuppressed = false): PtEvent {
  const ev = new PtEvent();
  ev.type = type;
  ev.ipLo = ipLo;
  ev.fromLo = fromLo;
  ev.ipSuppressed = ipSuppressed;
  return ev;
}

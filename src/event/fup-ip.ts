/**
 * The events whose IP comes from the FUP they bind to: the FUP publishes them with
 * its IP, and an overflow before the FUP publishes them with the IP suppressed.
 */
import { EVENT_TYPE_COUNT, EventType } from "./types.js";

const TAKES_FUP_IP = new Uint8Array(EVENT_TYPE_COUNT);
for (const type of [
  EventType.Tsx,
  EventType.Exstop,
  EventType.Mwait,
  EventType.Ptwrite,
  EventType.ExecMode,
  EventType.Iflags,
  EventType.Interrupt,
  EventType.Iret,
  EventType.Smi,
  EventType.Init,
  EventType.Vmentry,
  EventType.Vmexit,
  EventType.Shutdown,
  EventType.Uintr,
  EventType.Uiret,
  EventType.Trig,
  EventType.Swintr,
  EventType.Syscall,
]) {
  TAKES_FUP_IP[type] = 1;
}

/** Whether events of `type` take the IP of the FUP they bind to. */
export function takesFupIp(type: number): boolean {
  return TAKES_FUP_IP[type] === 1;
}

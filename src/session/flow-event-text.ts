/**
 * Events as ptxed prints them: `[` offset, time, what happened, `]`. The `, ip: ...`
 * parts appear with --event:ip, the offset with --offset, the TSC with --event:time.
 */
import { EventFlag, EventType, type PtEvent } from "../event/index.js";
import { hex64 } from "../packet/index.js";

export interface EventTextOptions {
  offset: boolean;
  eventTime: boolean;
  eventIp: boolean;
}

const EXEC_MODE_NAMES = ["<unknown>", "16-bit", "32-bit", "64-bit"];

/** `, ip: <ip>` when --event:ip asks for it and the event has an IP. */
function ipPart(ev: PtEvent, o: EventTextOptions): string {
  return o.eventIp && !ev.ipSuppressed ? `, ip: ${hex64(ev.ipHi, ev.ipLo)}` : "";
}

/** The same, for events whose IP is always valid (ptxed ignores ipSuppressed for them). */
function ipAlways(ev: PtEvent, o: EventTextOptions): string {
  return o.eventIp ? `, ip: ${hex64(ev.ipHi, ev.ipLo)}` : "";
}

function flag(ev: PtEvent, bit: number): boolean {
  return (ev.flags & bit) !== 0;
}

/** ptxed prints a TNT event's bits by testing `bits & i` for i = size, size/2, ..., 1. */
function tntBits(ev: PtEvent): string {
  let s = "";
  for (let i = ev.size; i > 0; i >>>= 1) s += ev.payloadLo & i ? "!" : ".";
  return s;
}

/** What happened, without brackets, offset and time. */
function body(ev: PtEvent, o: EventTextOptions): string {
  const payload = hex64(ev.payloadHi, ev.payloadLo, 1);
  switch (ev.type) {
    case EventType.Enabled:
      return (flag(ev, EventFlag.Resumed) ? "resumed" : "enabled") + ipAlways(ev, o);
    case EventType.Disabled:
      return `disabled${ipPart(ev, o)}`;
    case EventType.AsyncDisabled:
      return o.eventIp ? `disabled, at: ${hex64(ev.fromHi, ev.fromLo)}${ipPart(ev, o)}` : "disabled";
    case EventType.AsyncBranch:
      return o.eventIp
        ? `interrupt, from: ${hex64(ev.fromHi, ev.fromLo)}${ev.ipSuppressed ? "" : `, to: ${hex64(ev.ipHi, ev.ipLo)}`}`
        : "interrupt";
    case EventType.Paging:
    case EventType.AsyncPaging: {
      const nr = flag(ev, EventFlag.NonRoot) ? ", nr" : "";
      const ip = ev.type === EventType.AsyncPaging ? ipAlways(ev, o) : "";
      return `paging, cr3: ${hex64(ev.payloadHi, ev.payloadLo)}${nr}${ip}`;
    }
    case EventType.Overflow:
      return `overflow${ipPart(ev, o)}`;
    case EventType.ExecMode:
      return `exec mode: ${EXEC_MODE_NAMES[ev.mode] ?? "<invalid>"}${ipPart(ev, o)}`;
    case EventType.Tsx: {
      const what = flag(ev, EventFlag.Aborted)
        ? "aborted"
        : flag(ev, EventFlag.Speculative)
          ? "begin transaction"
          : "committed";
      return what + ipPart(ev, o);
    }
    case EventType.Stop:
      return "stopped";
    case EventType.Vmcs:
    case EventType.AsyncVmcs: {
      const ip = ev.type === EventType.AsyncVmcs ? ipAlways(ev, o) : "";
      return `vmcs, base: ${hex64(ev.payloadHi, ev.payloadLo)}${ip}`;
    }
    case EventType.Exstop:
      return `exstop${ipPart(ev, o)}`;
    case EventType.Mwait:
      return `mwait ${ev.hints.toString(16)} ${ev.ext.toString(16)}${ipPart(ev, o)}`;
    case EventType.Pwre:
      return `pwre c${(ev.state + 1) & 0xf}.${(ev.subState + 1) & 0xf}${flag(ev, EventFlag.Hw) ? " hw" : ""}`;
    case EventType.Pwrx: {
      const why =
        (flag(ev, EventFlag.Interrupt) ? "int: " : "") +
        (flag(ev, EventFlag.Store) ? "st: " : "") +
        (flag(ev, EventFlag.Autonomous) ? "hw: " : "");
      return `pwrx ${why}c${(ev.last + 1) & 0xf} (c${(ev.deepest + 1) & 0xf})`;
    }
    case EventType.Ptwrite:
      return `ptwrite: ${payload}${ipPart(ev, o)}`;
    case EventType.Tick:
      return `tick${ipPart(ev, o)}`;
    case EventType.Cbr:
      return `cbr: ${ev.ratio.toString(16)}`;
    case EventType.Mnt:
      return `mnt: ${payload}`;
    case EventType.Tip:
      return `tip: ${hex64(ev.ipHi, ev.ipLo, 1)}`;
    case EventType.Tnt:
      return `tnt: ${tntBits(ev)}`;
    case EventType.Iflags:
      return `interrupts ${flag(ev, EventFlag.Iflag) ? "enabled" : "disabled"}${ipPart(ev, o)}`;
    case EventType.Interrupt: {
      const cr2 = flag(ev, EventFlag.HasCr2) ? `, cr2: ${hex64(ev.payloadHi, ev.payloadLo)}` : "";
      return `interrupt ${ev.vector}${cr2}${ipPart(ev, o)}`;
    }
    case EventType.Sipi:
      return `sipi: ${ev.vector.toString(16)}`;
    case EventType.Vmexit: {
      const intr = flag(ev, EventFlag.HasVector) ? `, intr: ${ev.vector}` : "";
      const vmxr = flag(ev, EventFlag.HasVmxr) ? `, vmxr: ${hex64(ev.payloadHi, ev.payloadLo)}` : "";
      const vmxq = flag(ev, EventFlag.HasVmxq) ? `, vmxq: ${hex64(ev.payload2Hi, ev.payload2Lo)}` : "";
      return `vmexit${intr}${vmxr}${vmxq}${ipPart(ev, o)}`;
    }
    case EventType.Uintr:
    case EventType.Swintr:
      return `${ev.type === EventType.Uintr ? "uintr" : "swintr"} ${ev.vector}${ipPart(ev, o)}`;
    case EventType.Trig: {
      const mult = flag(ev, EventFlag.Mult) ? ", mult" : "";
      const icnt = ev.icnt ? `, icnt: ${ev.icnt}` : "";
      return `trig ${ev.trbv.toString(16).padStart(2, "0")}${mult}${ipPart(ev, o)}${icnt}`;
    }
    default:
      return (SIMPLE_NAMES[ev.type] ?? "") + ipPart(ev, o);
  }
}

/** Events that print their name and, with --event:ip, their IP. */
const SIMPLE_NAMES: Partial<Record<number, string>> = {
  [EventType.Iret]: "iret",
  [EventType.Smi]: "smi",
  [EventType.Rsm]: "rsm",
  [EventType.Init]: "init",
  [EventType.Vmentry]: "vmentry",
  [EventType.Shutdown]: "shutdown",
  [EventType.Uiret]: "uiret",
  [EventType.Syscall]: "syscall",
};

/** One event line, brackets included. `offset` is the decoder's trace offset (with --offset). */
export function eventText(ev: PtEvent, o: EventTextOptions, offset: number): string {
  const at = o.offset ? `${offset.toString(16).padStart(16, "0")}  ` : "";
  const time = o.eventTime && ev.hasTsc ? `${hex64(ev.tscHi, ev.tscLo)}  ` : "";
  return `[${at}${time}${body(ev, o)}]`;
}

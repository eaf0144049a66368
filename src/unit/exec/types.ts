/**
 * Executions: what the packet generator consumes.
 *
 * An execution is what one logical processor did, in retirement order: a stream of
 * *instructions* interleaved with *events* (state changes, asynchronous transfers,
 * payloads of the instructions just before them, time passing, MSR writes). It says
 * what happened, never what Intel PT emits: that is the generator's job, under a
 * configuration that is not part of the execution.
 *
 * ## Records
 *
 * | kind        | fields                                 | meaning |
 * |-------------|----------------------------------------|---------|
 * | `insn`      | ip, size (1..15), class, zlc           | one retired instruction; `class` is an `InsnClass` name (src/isa/types.ts, default `other`); `zlc: true` marks a zero-length CALL (displacement 0, not pushed on the RET-compression stack) |
 * | `cpl`       | cpl (0..3)                             | the privilege level from here on |
 * | `cr3`       | cr3                                    | CR3 from here on (MOV CR3, task switch, VM entry/exit) |
 * | `mode`      | mode (16, 32, 64)                      | the execution mode (CS.L/CS.D) from here on |
 * | `nonroot`   | nr (true/false)                        | VMX non-root operation from here on (VM entry 1, VM exit 0) |
 * | `vmcs`      | vmcs (4 KiB aligned)                   | the current VMCS pointer from here on (VMPTRLD, VM entry/exit) |
 * | `if`        | if (true/false)                        | RFLAGS.IF from here on (CLI, STI, POPF; an interrupt gate clears it, IRET restores it) |
 * | `cr2`       | cr2                                    | CR2 from here on: after a page fault (`exception` 14), the faulting address |
 * | `exit-qual` | qual                                   | after a `vmexit` whose reason has an exit qualification (SDM Vol. 3C "Exit Qualification"): its value |
 * | `exit-vector` | vector (0..255)                      | after a `vmexit` caused by an interrupt, exception or NMI (exit reasons 0 and 1): its vector |
 * | `swint`     | vector (0..255)                        | after an `interrupt`-class instruction (INT n, INT3 = 3, INTO = 4, INT1 = 1): the vector it raised (optional) |
 * | `smi`       | from, to                               | an SMI hit before the instruction at `from`; SMM code starts at `to` |
 * | `rsm`       |                                        | after the RSM that leaves SMM (a `far-other` instruction); execution resumes at the next flow point |
 * | `init`      | from                                   | an INIT signal hit before the instruction at `from`: the processor waits for a SIPI |
 * | `sipi`      | vector (0..255)                        | a start-up IPI ends the wait; execution starts at the next flow point (vector × 4 KiB, real mode) |
 * | `uintr`     | vector (0..63), from, to               | a user interrupt delivered before the instruction at `from` to the handler at `to` |
 * | `uiret`     |                                        | after the UIRET (a `far-other` instruction) that returns from a user-interrupt handler |
 * | `interrupt` | vector (0..255), from, to              | an external interrupt, NMI or SMI hit before the instruction at `from`; execution continues at `to` |
 * | `exception` | vector (0..255), from, to              | an exception; `from` is the faulting instruction (faults) or the next one (traps) |
 * | `vmexit`    | reason (u32), from, to                 | an asynchronous VM exit (VMCALL and friends are `vm-exit` instructions instead) |
 * | `tsx-abort` | from, to                               | a transaction aborted at `from`; execution continues at the fallback `to` |
 * | `ptw`       | value, bytes (4/8)                     | the operand of the `ptwrite` instruction just before (required right after each one) |
 * | `mwait`     | hints, ext (u32 each)                  | EAX and ECX of the `mwait` instruction just before (required right after each one) |
 * | `sleep`     | cstate, substate (0..15), hw (true/false) | the core enters a C-state (resolved thread C-state / sub-C-state; `hw`: entered autonomously by hardware, not by MWAIT/HLT); the core clock stops |
 * | `wake`      | last, deepest (0..15), reasons         | the core returns to C0; `reasons` lists "interrupt", "store" (monitored store), "hw" (autonomous) |
 * | `cycles`    | n (0..2^53-1)                          | n core clocks pass (the TSC and crystal clock follow at the current core:bus ratio) |
 * | `ticks`     | n (0..2^53-1)                          | n TSC ticks pass (core clocks follow, unless the core sleeps) |
 * | `cbr`       | ratio (1..255)                         | the core:bus ratio changes (frequency change) |
 * | `wrmsr`     | msr (u32), value                       | software writes an MSR (e.g. IA32_RTIT_CTL to set or clear TraceEn) |
 * | `msr-load`  | msr (u32), value, by                   | an MSR changes by other means than WRMSR, with WRMSR's rules (SDM §36.2.7.1); `by`: `xrstors`, `xsaves` (which clears TraceEn after saving), `vm-entry` (the VMCS's guest IA32_RTIT_CTL or MSR-load list, after the `vm-entry` instruction) or `vm-exit` (the clear-IA32_RTIT_CTL control or the MSR-load list, after the `vmexit` record or `vm-exit` instruction) |
 * | `end`       | ip                                     | optional last record: the IP the next instruction would have had |
 *
 * ## Where branches go
 *
 * The outcome of an instruction is implied by the next *flow point*: the next
 * `insn`'s ip, or the `from` of an `interrupt`/`exception`/`vmexit`/`tsx-abort`/`smi`/`init`/`uintr`/`end`
 * that comes first. A conditional branch is taken iff that IP differs from ip + size;
 * an indirect or far branch goes there. State records (`cpl`, `cr3`, `mode`,
 * `nonroot`, `vmcs`, `if`, `cr2`) between a transfer and the next flow point describe the state at
 * the transfer's target: a SYSCALL is `insn syscall` then `cpl 0`; a VM entry is `insn
 * vm-entry`, `nonroot 1`, `cr3 <guest>`; a MOV CR3 is `insn mov-cr3`, `cr3 <new>`.
 * State records before the first instruction give the initial state (defaults: CPL 0,
 * CR3 0, 64-bit mode, root operation, VMCS pointer none = all ones, IF 1, core:bus ratio
 * from the generator's configuration). Without a final `end`, the last instruction's
 * outcome is unknown and the generator emits nothing that depends on it.
 *
 * ## JSON Lines
 *
 * One JSON object per line, `"k"` naming the kind, the other keys named as in the
 * table. Blank lines are skipped. 64-bit values (ip, from, to, cr3, vmcs, value) are
 * strings of hex with `0x` (`"0xffffffff81000000"`) or decimal digits, or JSON
 * integers up to 2^53-1; other numbers are JSON integers or such strings; flags (zlc,
 * nr, hw) are booleans (0 and 1 are accepted too). Optional keys: `class` (default
 * `other`), `zlc`, `hw` (default false), `reasons` (default none). Unknown keys,
 * missing required keys, out-of-range values and misplaced `ptw`/`mwait`/`end` records
 * are rejected with the line number and byte offset. Example:
 *
 * ```
 * {"k":"cpl","cpl":3}
 * {"k":"insn","ip":"0x401000","size":2,"class":"cond-branch"}
 * {"k":"insn","ip":"0x401010","size":5,"class":"call"}
 * {"k":"interrupt","vector":32,"from":"0x401100","to":"0xffffffff81a00000"}
 * {"k":"cpl","cpl":0}
 * {"k":"ptw","value":"0x2a","bytes":4}
 * ```
 *
 * ## Binary form
 *
 * The magic `PTKEXEC` and a version byte (1), then records, all little-endian. Each
 * record starts with a tag byte: `0x00` an instruction whose ip is the previous
 * instruction's ip + size (the first instruction's previous ip is 0), followed by
 * its info (u16: size bits 3:0, class bits 8:4, bit 9 zlc); `0x01` the same with the
 * ip (u64) after the info; `0x10 + kind` an event, followed by the fields of
 * {@link EVENT_FIELDS} for its kind in the order a (u32), b (u32), value (u64),
 * to (u64). Readers reject bad tags, bad fields and truncation with the byte offset.
 *
 * ## In memory
 *
 * {@link Execution}: columnar typed arrays the generator walks without allocating:
 * instructions in `ipHi`/`ipLo`/`info`, events in `ev*` with `evAt[e]` = the number
 * of instructions before event e. {@link ExecBuilder} appends records and validates
 * them. Readers and writers: `readExecJsonl`/`writeExecJsonl` (jsonl.ts),
 * `readExecBinary`/`writeExecBinary` (binary.ts).
 */

import { ErrorCode, PtError } from "../../base/errors.js";
import { ExecMode, INSN_CLASS_COUNT, InsnClass, InsnFlag } from "../../isa/types.js";

/** Event kinds (record kinds other than `insn`). Numbering is ptkit's own. */
export const ExecEvent = {
  Cpl: 0,
  Cr3: 1,
  Mode: 2,
  NonRoot: 3,
  Vmcs: 4,
  Interrupt: 5,
  Exception: 6,
  VmExit: 7,
  TsxAbort: 8,
  Ptw: 9,
  Mwait: 10,
  Sleep: 11,
  Wake: 12,
  Cycles: 13,
  Ticks: 14,
  Cbr: 15,
  Wrmsr: 16,
  End: 17,
  If: 18,
  Cr2: 19,
  Smi: 20,
  Rsm: 21,
  Init: 22,
  Sipi: 23,
  Uintr: 24,
  Uiret: 25,
  SwInt: 26,
  ExitQual: 27,
  ExitVector: 28,
  MsrLoad: 29,
} as const;
export type ExecEvent = (typeof ExecEvent)[keyof typeof ExecEvent];

/** Number of event kinds, for tables indexed by kind. */
export const EXEC_EVENT_COUNT = 30;

/** The `"k"` of each event kind in JSON Lines. */
export const EXEC_EVENT_NAMES: readonly string[] = [
  "cpl",
  "cr3",
  "mode",
  "nonroot",
  "vmcs",
  "interrupt",
  "exception",
  "vmexit",
  "tsx-abort",
  "ptw",
  "mwait",
  "sleep",
  "wake",
  "cycles",
  "ticks",
  "cbr",
  "wrmsr",
  "end",
  "if",
  "cr2",
  "smi",
  "rsm",
  "init",
  "sipi",
  "uintr",
  "uiret",
  "swint",
  "exit-qual",
  "exit-vector",
  "msr-load",
];

/** Bits of the `wake` reasons (the value of a Wake event). */
export const WakeReason = {
  Interrupt: 1 << 0,
  Store: 1 << 1,
  Hw: 1 << 2,
} as const;

/**
 * Which columns each event kind uses: `a`/`b` (u32), `value` (evHi/evLo) and `to`
 * (evToHi/evToLo). Unused columns hold 0.
 *
 * | kind      | a         | b        | value        | to     |
 * |-----------|-----------|----------|--------------|--------|
 * | Cpl       | cpl       |          |              |        |
 * | Cr3       |           |          | cr3          |        |
 * | Mode      | ExecMode  |          |              |        |
 * | NonRoot   | 0/1       |          |              |        |
 * | Vmcs      |           |          | VMCS pointer |        |
 * | Interrupt | vector    |          | from         | to     |
 * | Exception | vector    |          | from         | to     |
 * | VmExit    | reason    |          | from         | to     |
 * | TsxAbort  |           |          | from         | to     |
 * | Ptw       | bytes     |          | payload      |        |
 * | Mwait     | hints     | ext      |              |        |
 * | Sleep     | cstate    | substate | hw (0/1)     |        |
 * | Wake      | last      | deepest  | reasons      |        |
 * | Cycles    |           |          | n            |        |
 * | Ticks     |           |          | n            |        |
 * | Cbr       | ratio     |          |              |        |
 * | Wrmsr     | msr       |          | value        |        |
 * | End       |           |          | ip           |        |
 * | If        | 0/1       |          |              |        |
 * | Cr2       |           |          | cr2          |        |
 * | Smi       |           |          | from         | to     |
 * | Rsm       |           |          |              |        |
 * | Init      |           |          | from         |        |
 * | Sipi      | vector    |          |              |        |
 * | Uintr     | vector    |          | from         | to     |
 * | Uiret     |           |          |              |        |
 * | SwInt     | vector    |          |              |        |
 * | ExitQual  |           |          | qualification|        |
 * | ExitVector| vector    |          |              |        |
 * | MsrLoad   | msr       | MsrLoadBy| value        |        |
 */
export const EventField = { A: 1, B: 2, Value: 4, To: 8 } as const;

const F = EventField;
/** {@link EventField} bits used by each kind. */
export const EVENT_FIELDS: readonly number[] = [
  F.A, // Cpl
  F.Value, // Cr3
  F.A, // Mode
  F.A, // NonRoot
  F.Value, // Vmcs
  F.A | F.Value | F.To, // Interrupt
  F.A | F.Value | F.To, // Exception
  F.A | F.Value | F.To, // VmExit
  F.Value | F.To, // TsxAbort
  F.A | F.Value, // Ptw
  F.A | F.B, // Mwait
  F.A | F.B | F.Value, // Sleep
  F.A | F.B | F.Value, // Wake
  F.Value, // Cycles
  F.Value, // Ticks
  F.A, // Cbr
  F.A | F.Value, // Wrmsr
  F.Value, // End
  F.A, // If
  F.Value, // Cr2
  F.Value | F.To, // Smi
  0, // Rsm
  F.Value, // Init
  F.A, // Sipi
  F.A | F.Value | F.To, // Uintr
  0, // Uiret
  F.A, // SwInt
  F.Value, // ExitQual
  F.A, // ExitVector
  F.A | F.B | F.Value, // MsrLoad
];

/** What changed an MSR: WRMSR (a `wrmsr` record), or the `by` of an `msr-load` record (1..4). */
export const MsrLoadBy = { Wrmsr: 0, Xrstors: 1, Xsaves: 2, VmEntry: 3, VmExit: 4 } as const;
/** Names of {@link MsrLoadBy} values, indexed by value. */
export const MSR_LOAD_BY_NAMES: readonly string[] = ["wrmsr", "xrstors", "xsaves", "vm-entry", "vm-exit"];

/** Whether an event kind is a flow point: its `value` is the IP where it happened. */
export function isFlowEvent(kind: number): boolean {
  return (
    kind === ExecEvent.Interrupt ||
    kind === ExecEvent.Exception ||
    kind === ExecEvent.VmExit ||
    kind === ExecEvent.TsxAbort ||
    kind === ExecEvent.Smi ||
    kind === ExecEvent.Init ||
    kind === ExecEvent.Uintr ||
    kind === ExecEvent.End
  );
}

/** Packing of {@link Execution.info}: size bits 3:0, class bits 8:4, zero-length call bit 9. */
export const INFO_CLASS_SHIFT = 4;
export const INFO_ZLC = 1 << 9;

/** The info word of an instruction (arguments assumed valid; see {@link checkInsn}). */
export function packInfo(size: number, iclass: number, flags: number): number {
  return size | (iclass << INFO_CLASS_SHIFT) | (flags & InsnFlag.ZeroLengthCall ? INFO_ZLC : 0);
}

/** Size in bytes of an info word. */
export function infoSize(info: number): number {
  return info & 0xf;
}

/** {@link InsnClass} of an info word. */
export function infoClass(info: number): InsnClass {
  return ((info >>> INFO_CLASS_SHIFT) & 0x1f) as InsnClass;
}

/** Largest count of a Cycles/Ticks event (Numbers stay exact). */
export const MAX_TIME_STEP = Number.MAX_SAFE_INTEGER;

const TWO32 = 2 ** 32;

/** Whether hi:lo are unsigned 32-bit halves. */
function isHalves(hi: number, lo: number): boolean {
  return hi >>> 0 === hi && lo >>> 0 === lo;
}

/** Why an instruction record is invalid, or "" when it is fine. */
export function checkInsn(ipHi: number, ipLo: number, size: number, iclass: number, flags: number): string {
  if (!isHalves(ipHi, ipLo)) return "ip is not a 64-bit value";
  if (!Number.isInteger(size) || size < 1 || size > 15) return `size ${size} is not in 1..15`;
  if (!Number.isInteger(iclass) || iclass < 0 || iclass >= INSN_CLASS_COUNT)
    return `class ${iclass} is unknown`;
  if (flags !== 0 && flags !== InsnFlag.ZeroLengthCall) return `flags ${flags} are not 0 or ZeroLengthCall`;
  if (flags !== 0 && iclass !== InsnClass.Call) return "only a direct call can be a zero-length call";
  return "";
}

/** Why the fields of an event are invalid (alone, without its neighbours), or "". */
export function checkEvent(
  kind: number,
  a: number,
  b: number,
  hi: number,
  lo: number,
  toHi: number,
  toLo: number,
): string {
  const used = EVENT_FIELDS[kind];
  if (used === undefined || !Number.isInteger(kind)) return `event kind ${kind} is unknown`;
  if (a >>> 0 !== a || b >>> 0 !== b || !isHalves(hi, lo) || !isHalves(toHi, toLo))
    return "a field is not an unsigned integer of its width";
  if ((!(used & F.A) && a !== 0) || (!(used & F.B) && b !== 0)) return "a field the kind does not use is set";
  if ((!(used & F.Value) && (hi | lo) !== 0) || (!(used & F.To) && (toHi | toLo) !== 0))
    return "a field the kind does not use is set";
  switch (kind) {
    case ExecEvent.Cpl:
      return a <= 3 ? "" : `cpl ${a} is not in 0..3`;
    case ExecEvent.Mode:
      return a === ExecMode.Bits16 || a === ExecMode.Bits32 || a === ExecMode.Bits64 ? "" : "mode is unknown";
    case ExecEvent.NonRoot:
      return a <= 1 ? "" : "nr is not 0 or 1";
    case ExecEvent.If:
      return a <= 1 ? "" : "if is not 0 or 1";
    case ExecEvent.Vmcs:
      return (lo & 0xfff) === 0 ? "" : "the VMCS pointer is not 4 KiB aligned";
    case ExecEvent.Interrupt:
    case ExecEvent.Exception:
    case ExecEvent.Sipi:
    case ExecEvent.SwInt:
    case ExecEvent.ExitVector:
      return a <= 255 ? "" : `vector ${a} is not in 0..255`;
    case ExecEvent.Uintr:
      return a <= 63 ? "" : `vector ${a} is not in 0..63`;
    case ExecEvent.Ptw:
      if (a !== 4 && a !== 8) return "bytes is not 4 or 8";
      return a === 4 && hi !== 0 ? "a 4-byte value is above 2^32-1" : "";
    case ExecEvent.Sleep:
      if (a > 15 || b > 15) return "cstate or substate is not in 0..15";
      return hi === 0 && lo <= 1 ? "" : "hw is not 0 or 1";
    case ExecEvent.Wake:
      if (a > 15 || b > 15) return "last or deepest is not in 0..15";
      return hi === 0 && (lo & ~(WakeReason.Interrupt | WakeReason.Store | WakeReason.Hw)) === 0
        ? ""
        : "unknown wake reason";
    case ExecEvent.Cycles:
    case ExecEvent.Ticks:
      return hi * TWO32 + lo <= MAX_TIME_STEP ? "" : "the count is above 2^53-1";
    case ExecEvent.Cbr:
      return a >= 1 && a <= 255 ? "" : `ratio ${a} is not in 1..255`;
    case ExecEvent.MsrLoad:
      return b >= 1 && b < MSR_LOAD_BY_NAMES.length
        ? ""
        : `by ${b} is not xrstors, xsaves, vm-entry or vm-exit`;
  }
  return "";
}

/**
 * One execution in columnar form. Instruction i: `ipHi[i]:ipLo[i]`, `info[i]` (see
 * {@link infoSize}, {@link infoClass}, {@link INFO_ZLC}). Event e happens after
 * `evAt[e]` instructions, before instruction `evAt[e]`; events at the same position
 * are in record order. The arrays are exactly as long as the counts.
 */
export class Execution {
  constructor(
    readonly ipHi: Uint32Array,
    readonly ipLo: Uint32Array,
    readonly info: Uint16Array,
    readonly evAt: Uint32Array,
    readonly evKind: Uint8Array,
    readonly evA: Uint32Array,
    readonly evB: Uint32Array,
    readonly evHi: Uint32Array,
    readonly evLo: Uint32Array,
    readonly evToHi: Uint32Array,
    readonly evToLo: Uint32Array,
  ) {}

  get insnCount(): number {
    return this.info.length;
  }

  get eventCount(): number {
    return this.evKind.length;
  }

  /** Instructions plus events. */
  get recordCount(): number {
    return this.info.length + this.evKind.length;
  }
}

/**
 * Appends records in execution order and builds an {@link Execution}. Every method
 * validates its record and throws a {@link PtError} (`Invalid`, offset = the record's
 * index) naming the problem; readers catch it to add the line or byte offset.
 * Capacity grows by doubling, so appends are amortised O(1) and allocate only then.
 */
export class ExecBuilder {
  private nInsn = 0;
  private nEv = 0;
  private ipHi = new Uint32Array(1024);
  private ipLo = new Uint32Array(1024);
  private info = new Uint16Array(1024);
  private evAt = new Uint32Array(64);
  private evKind = new Uint8Array(64);
  private evA = new Uint32Array(64);
  private evB = new Uint32Array(64);
  private evHi = new Uint32Array(64);
  private evLo = new Uint32Array(64);
  private evToHi = new Uint32Array(64);
  private evToLo = new Uint32Array(64);
  /** A ptw/mwait payload the previous instruction still needs (its class), else -1. */
  private needPayload = -1;
  private ended = false;

  /** Records appended so far. */
  get recordCount(): number {
    return this.nInsn + this.nEv;
  }

  /** Instructions appended so far (the index the next one gets). */
  get insnCount(): number {
    return this.nInsn;
  }

  /** Append a retired instruction. `flags` may hold {@link InsnFlag.ZeroLengthCall}. */
  insn(ipHi: number, ipLo: number, size: number, iclass: number, flags = 0): this {
    this.fail(this.tryInsn(ipHi, ipLo, size, iclass, flags));
    return this;
  }

  /** Append an event; unused fields must be 0 (see {@link EVENT_FIELDS}). */
  event(kind: ExecEvent, a = 0, b = 0, hi = 0, lo = 0, toHi = 0, toLo = 0): this {
    this.fail(this.tryEvent(kind, a, b, hi, lo, toHi, toLo));
    return this;
  }

  /** {@link insn} without the throw: appends and returns "", or returns why not (for readers). */
  tryInsn(ipHi: number, ipLo: number, size: number, iclass: number, flags = 0): string {
    const why = checkInsn(ipHi, ipLo, size, iclass, flags) || this.placement(-1);
    if (why !== "") return why;
    if (this.nInsn === this.info.length) this.growInsns();
    const i = this.nInsn++;
    this.ipHi[i] = ipHi;
    this.ipLo[i] = ipLo;
    this.info[i] = packInfo(size, iclass, flags);
    this.needPayload = iclass === InsnClass.PtWrite || iclass === InsnClass.Mwait ? iclass : -1;
    return "";
  }

  /** {@link event} without the throw: appends and returns "", or returns why not (for readers). */
  tryEvent(kind: number, a: number, b: number, hi: number, lo: number, toHi: number, toLo: number): string {
    const why = checkEvent(kind, a, b, hi, lo, toHi, toLo) || this.placement(kind);
    if (why !== "") return why;
    if (this.nEv === this.evKind.length) this.growEvents();
    const e = this.nEv++;
    this.evAt[e] = this.nInsn;
    this.evKind[e] = kind;
    this.evA[e] = a;
    this.evB[e] = b;
    this.evHi[e] = hi;
    this.evLo[e] = lo;
    this.evToHi[e] = toHi;
    this.evToLo[e] = toLo;
    if (kind === ExecEvent.End) this.ended = true;
    this.needPayload = -1;
    return "";
  }

  cpl(cpl: number): this {
    return this.event(ExecEvent.Cpl, cpl);
  }

  cr3(hi: number, lo: number): this {
    return this.event(ExecEvent.Cr3, 0, 0, hi, lo);
  }

  mode(mode: ExecMode): this {
    return this.event(ExecEvent.Mode, mode);
  }

  nonRoot(nr: boolean): this {
    return this.event(ExecEvent.NonRoot, nr ? 1 : 0);
  }

  vmcs(hi: number, lo: number): this {
    return this.event(ExecEvent.Vmcs, 0, 0, hi, lo);
  }

  /** RFLAGS.IF from here on. */
  iflag(on: boolean): this {
    return this.event(ExecEvent.If, on ? 1 : 0);
  }

  /** CR2 from here on (the address of the page fault just delivered). */
  cr2(hi: number, lo: number): this {
    return this.event(ExecEvent.Cr2, 0, 0, hi, lo);
  }

  /** An asynchronous transfer: Interrupt, Exception, VmExit (a = vector/reason) or TsxAbort (a = 0). */
  transfer(kind: ExecEvent, a: number, fromHi: number, fromLo: number, toHi: number, toLo: number): this {
    if (!isFlowEvent(kind) || kind === ExecEvent.End)
      this.fail(`${EXEC_EVENT_NAMES[kind]} is not a transfer`);
    return this.event(kind, a, 0, fromHi, fromLo, toHi, toLo);
  }

  ptw(bytes: 4 | 8, hi: number, lo: number): this {
    return this.event(ExecEvent.Ptw, bytes, 0, hi, lo);
  }

  mwait(hints: number, ext: number): this {
    return this.event(ExecEvent.Mwait, hints, ext);
  }

  sleep(cstate: number, substate: number, hw: boolean): this {
    return this.event(ExecEvent.Sleep, cstate, substate, 0, hw ? 1 : 0);
  }

  /** `reasons`: {@link WakeReason} bits. */
  wake(last: number, deepest: number, reasons: number): this {
    return this.event(ExecEvent.Wake, last, deepest, 0, reasons);
  }

  cycles(n: number): this {
    return this.event(ExecEvent.Cycles, 0, 0, Math.floor(n / TWO32), n >>> 0);
  }

  ticks(n: number): this {
    return this.event(ExecEvent.Ticks, 0, 0, Math.floor(n / TWO32), n >>> 0);
  }

  cbr(ratio: number): this {
    return this.event(ExecEvent.Cbr, ratio);
  }

  wrmsr(msr: number, hi: number, lo: number): this {
    return this.event(ExecEvent.Wrmsr, msr, 0, hi, lo);
  }

  /** An MSR change by XRSTORS, XSAVES or a VM entry/exit (`by`: {@link MsrLoadBy}, not Wrmsr). */
  msrLoad(msr: number, hi: number, lo: number, by: number): this {
    return this.event(ExecEvent.MsrLoad, msr, by, hi, lo);
  }

  end(ipHi: number, ipLo: number): this {
    return this.event(ExecEvent.End, 0, 0, ipHi, ipLo);
  }

  /**
   * The execution so far. Throws when the last PTWRITE or MWAIT lacks its payload.
   * The builder may go on appending afterwards; the result does not change.
   */
  build(): Execution {
    this.fail(this.unfinished());
    const n = this.nInsn;
    const m = this.nEv;
    return new Execution(
      this.ipHi.slice(0, n),
      this.ipLo.slice(0, n),
      this.info.slice(0, n),
      this.evAt.slice(0, m),
      this.evKind.slice(0, m),
      this.evA.slice(0, m),
      this.evB.slice(0, m),
      this.evHi.slice(0, m),
      this.evLo.slice(0, m),
      this.evToHi.slice(0, m),
      this.evToLo.slice(0, m),
    );
  }

  /** Why a record of `kind` (-1: an instruction) cannot come next, or "". */
  private placement(kind: number): string {
    if (this.ended) return "nothing may follow an end record";
    if (kind === ExecEvent.Ptw)
      return this.needPayload === InsnClass.PtWrite ? "" : "ptw must follow a ptwrite instruction";
    if (kind === ExecEvent.Mwait)
      return this.needPayload === InsnClass.Mwait ? "" : "mwait must follow an mwait instruction";
    return this.unfinished();
  }

  /** Why the records so far are not a whole execution (a PTWRITE or MWAIT lacks its payload), or "". */
  unfinished(): string {
    if (this.needPayload === InsnClass.PtWrite)
      return "a ptwrite instruction must be followed by its ptw record";
    if (this.needPayload === InsnClass.Mwait)
      return "an mwait instruction must be followed by its mwait record";
    return "";
  }

  private fail(reason: string): void {
    if (reason !== "") throw new PtError(ErrorCode.Invalid, this.recordCount, undefined, reason);
  }

  private growInsns(): void {
    const cap = this.info.length * 2;
    this.ipHi = grow32(this.ipHi, cap);
    this.ipLo = grow32(this.ipLo, cap);
    const info = new Uint16Array(cap);
    info.set(this.info);
    this.info = info;
  }

  private growEvents(): void {
    const cap = this.evKind.length * 2;
    this.evAt = grow32(this.evAt, cap);
    const kind = new Uint8Array(cap);
    kind.set(this.evKind);
    this.evKind = kind;
    this.evA = grow32(this.evA, cap);
    this.evB = grow32(this.evB, cap);
    this.evHi = grow32(this.evHi, cap);
    this.evLo = grow32(this.evLo, cap);
    this.evToHi = grow32(this.evToHi, cap);
    this.evToLo = grow32(this.evToLo, cap);
  }
}

function grow32(a: Uint32Array, cap: number): Uint32Array<ArrayBuffer> {
  const next = new Uint32Array(cap);
  next.set(a);
  return next;
}

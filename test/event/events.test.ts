/**
 * The other events: power (MWAIT, EXSTOP, PWRE, PWRX), PTWRITE, CBR, MNT, TraceStop,
 * Event Trace (CFE, EVD) and TRIG, bound to a FUP or standalone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CfeType, EvdType, Flag } from "../../src/packet/types.js";
import { decodeEvents, Trace } from "./helpers.js";

const enabledAt = (ip: bigint) => new Trace().psb().fup(ip).psbend();
const afterStatus = (t: Trace) => decodeEvents(t.bytes()).events.slice(1);
const endOf = (t: Trace) => decodeEvents(t.bytes()).end;

test("MWAIT and EXSTOP with IP bind to the same FUP, MWAIT first", () => {
  const t = enabledAt(0x1000n).mwait(5, 1).exstop(true).fup(0x1010n).tnt("!");
  assert.deepEqual(afterStatus(t), ["mwait 5,1 0x1010", "exstop 0x1010", "tnt !"]);
});

test("MWAIT and EXSTOP without IP stand alone", () => {
  const t = enabledAt(0x1000n).mwait(0x20, 0).exstop(false).exstop(false);
  assert.deepEqual(afterStatus(t), ["mwait 32,0 -", "exstop -", "exstop -"]);
});

test("PWRE is published at its PWRX, keeping its own time", () => {
  const t = enabledAt(0x1000n)
    .tsc(0x100n)
    .pwre(1, 2, true)
    .tsc(0x200n)
    .pwrx(3, 4, Flag.WakeInt | Flag.WakeHw);
  t.pwrx(5, 6, Flag.WakeStore);
  const d = decodeEvents(t.bytes());
  assert.deepEqual(d.events.slice(1), ["pwre 1.2 hw", "pwrx 3,4 int hw", "pwrx 5,6 st"]);
  assert.deepEqual(
    d.raw.slice(1).map((e) => e.tsc),
    [0x100n, 0x200n, 0x200n],
  );
});

test("PTWRITE with IP binds to its FUP; without stands alone", () => {
  const t = enabledAt(0x1000n).ptw(0x1234n, 4, true).fup(0x1020n).ptw(0xfedcba9876543210n, 8, false);
  assert.deepEqual(afterStatus(t), ["ptwrite 0x1234/4 0x1020", "ptwrite 0xfedcba9876543210/8 -"]);
});

test("CBR, MNT and TraceStop stand alone", () => {
  const t = enabledAt(0x1000n).cbr(20).mnt(0x1122334455667788n).pgd().stop();
  assert.deepEqual(afterStatus(t), ["cbr 20", "mnt 0x1122334455667788", "disabled -", "stop"]);
});

test("CBR with ratio 0 is -BadPacket", () => {
  assert.match(endOf(enabledAt(0x1000n).cbr(0)), /^unknown packet/);
});

test("CFE INTR: with IP at its FUP; without, at the next FUP while tracing", () => {
  const t = enabledAt(0x1000n).cfe(CfeType.Intr, 14, true).fup(0x1030n).cfe(CfeType.Intr, 3, false);
  t.fup(0x1040n).tip(0x5000n);
  assert.deepEqual(afterStatus(t), [
    "interrupt v14 0x1030",
    "interrupt v3 0x1040",
    "async-branch 0x1040->0x5000",
  ]);
});

test("CFE without IP while tracing is disabled stands alone", () => {
  const t = enabledAt(0x1000n).pgd().cfe(CfeType.Intr, 3, false).cfe(CfeType.Sipi, 5, false);
  t.cfe(CfeType.Syscall, 0, false);
  assert.deepEqual(afterStatus(t), ["disabled -", "interrupt v3 -", "sipi v5 -", "syscall -"]);
});

test("EVD data joins the CFE that follows", () => {
  const t = enabledAt(0x1000n).evd(EvdType.Cr2, 0xdead000n).cfe(CfeType.Intr, 14, true).fup(0x1050n);
  t.evd(EvdType.VmxReason, 0x30n).evd(EvdType.VmxQualification, 0x7n).cfe(CfeType.VmExitIntr, 0x20, true);
  t.fup(0x1060n).cfe(CfeType.VmExit, 0, true).fup(0x1070n);
  assert.deepEqual(afterStatus(t), [
    "interrupt v14 0x1050 cr2=0xdead000",
    "vmexit v32 0x1060 vmxr=0x30 vmxq=0x7",
    "vmexit v- 0x1070",
  ]);
});

test("EVD misuse is -BadContext", () => {
  const twice = enabledAt(0x1000n).evd(EvdType.Cr2, 1n).evd(EvdType.Cr2, 2n);
  assert.match(endOf(twice), /^unexpected packet context/);
  const mismatch = enabledAt(0x1000n).evd(EvdType.Cr2, 1n).cfe(CfeType.Iret, 0, true);
  assert.match(endOf(mismatch), /^unexpected packet context/);
  const reasonTwice = enabledAt(0x1000n).evd(EvdType.VmxReason, 1n).evd(EvdType.VmxReason, 1n);
  assert.match(endOf(reasonTwice), /^unexpected packet context/);
});

test("CFE types that only bind with IP, and those that never have one", () => {
  const t = enabledAt(0x1000n).cfe(CfeType.Iret, 0, true).fup(0x1100n).cfe(CfeType.Iret, 0, false);
  t.cfe(CfeType.Rsm, 0, false).fup(0x1200n).tip(0x1300n);
  assert.deepEqual(afterStatus(t), ["iret 0x1100", "iret -", "rsm -", "async-branch 0x1200->0x1300"]);
  assert.match(endOf(enabledAt(0x1000n).cfe(CfeType.Rsm, 0, true)), /^unknown packet/);
  assert.match(endOf(enabledAt(0x1000n).cfe(CfeType.Sipi, 1, true)), /^unknown packet/);
});

test("every CFE type maps to its event", () => {
  const cases: Array<[number, string]> = [
    [CfeType.Smi, "smi"],
    [CfeType.Init, "init"],
    [CfeType.VmEntry, "vmentry"],
    [CfeType.Shutdown, "shutdown"],
    [CfeType.Uintr, "uintr v9"],
    [CfeType.Uiret, "uiret"],
    [CfeType.SwIntr, "swintr v9"],
    [CfeType.Syscall, "syscall"],
  ];
  for (const [type, name] of cases) {
    const t = enabledAt(0x1000n).cfe(type, 9, true).fup(0x1400n);
    assert.deepEqual(afterStatus(t), [`${name} 0x1400`], name);
  }
});

test("a CFE of unknown type is skipped, with the FUP it binds", () => {
  const t = enabledAt(0x1000n).cfe(11, 0, true).fup(0x1500n).tnt("!").cfe(31, 0, false).tnt(".");
  assert.deepEqual(afterStatus(t), ["tnt !", "tnt ."]);
});

test("TRIG: anchored at a FUP, counted from the last anchor, or without IP", () => {
  const t = enabledAt(0x1000n).trig(5, { ip: true, icnt: 0 }).fup(0x1070n).trig(6, { icnt: 3, mult: true });
  t.trig(7);
  assert.deepEqual(afterStatus(t), [
    "trig trbv=5 icnt=0 0x1070",
    "trig trbv=6 icnt=3 0x0 mult",
    "trig trbv=7 icnt=0 -",
  ]);
});

test("TRIG misuse is -BadPacket", () => {
  assert.match(endOf(enabledAt(0x1000n).trig(1, { ip: true })), /^unknown packet/);
  assert.match(endOf(enabledAt(0x1000n).trig(1, { ip: true, icnt: 2 })), /^unknown packet/);
  assert.match(endOf(enabledAt(0x1000n).pgd().trig(1, { icnt: 2 })), /^unknown packet/);
});

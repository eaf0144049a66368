/** Timing packets for tests, filled the way the packet decoder fills them. */
import { Packet, PacketType } from "../../src/packet/types.js";

export function tscPacket(value: bigint): Packet {
  const p = new Packet();
  p.type = PacketType.Tsc;
  p.payload = value;
  return p;
}

export function cbrPacket(ratio: number): Packet {
  const p = new Packet();
  p.type = PacketType.Cbr;
  p.a = ratio;
  return p;
}

export function tmaPacket(ctc: number, fc: number): Packet {
  const p = new Packet();
  p.type = PacketType.Tma;
  p.a = ctc;
  p.b = fc;
  return p;
}

export function mtcPacket(ctc: number): Packet {
  const p = new Packet();
  p.type = PacketType.Mtc;
  p.a = ctc;
  return p;
}

export function cycPacket(value: bigint): Packet {
  const p = new Packet();
  p.type = PacketType.Cyc;
  p.payload = value;
  return p;
}

/**
 * Processor identification and the errata ptkit works around, as data.
 *
 * The table lists, per erratum, the family/model pairs it applies to (as libipt's
 * `pt_cpu_errata` does). A CPU not in the table is "unknown": decoding follows the
 * specification and callers may report that no errata could be determined.
 */

import { parseCInt } from "../base/c-int.js";
import { DecodeQuirk } from "../packet/decode.js";

export interface Cpu {
  family: number;
  model: number;
  stepping: number;
}

export const ERRATA_NAMES = [
  "bdm70",
  "bdm64",
  "skd007",
  "skd022",
  "skd010",
  "skl014",
  "apl12",
  "apl11",
  "skl168",
  "skz84",
] as const;
export type ErratumName = (typeof ERRATA_NAMES)[number];
export type Errata = Record<ErratumName, boolean>;

/** Errata groups and the models (family 6 unless given as "f/m") that have them. */
const GROUPS: ReadonlyArray<{ errata: readonly ErratumName[]; cpus: readonly string[] }> = [
  // Broadwell
  { errata: ["bdm70", "bdm64"], cpus: ["6/0x3d", "6/0x47", "6/0x4f", "6/0x56"] },
  // Skylake, Kaby Lake, Coffee Lake, Comet Lake client
  {
    errata: ["bdm70", "skd007", "skd022", "skd010", "skl014", "skl168"],
    cpus: ["6/0x4e", "6/0x5e", "6/0x8e", "6/0x9e", "6/0xa5", "6/0xa6"],
  },
  // Skylake-SP, Ice Lake server
  { errata: ["bdm70", "skl014", "skd022", "skz84"], cpus: ["6/0x55", "6/0x6a", "6/0x6c"] },
  // Sapphire Rapids, Emerald Rapids, Granite Rapids
  {
    errata: ["bdm70", "skd022", "skz84"],
    cpus: ["6/0x8f", "6/0xcf", "6/0xad", "6/0xae", "0x13/0x01"],
  },
  // Cannon Lake, Ice Lake client, Tiger Lake
  {
    errata: ["bdm70", "skl014", "skd022"],
    cpus: ["6/0x66", "6/0x7d", "6/0x7e", "6/0x8c", "6/0x8d", "6/0xa7", "6/0xa8"],
  },
  // Alder Lake, Raptor Lake, Meteor Lake, Arrow Lake, Lunar Lake, Panther Lake
  {
    errata: ["bdm70", "skd022", "apl11"],
    cpus: [
      "6/0x97",
      "6/0x9a",
      "6/0xba",
      "6/0xb7",
      "6/0xbf",
      "6/0xc5",
      "6/0xc6",
      "6/0xb5",
      "6/0xaa",
      "6/0xac",
      "6/0xbd",
      "6/0xcc",
      "6/0xd5",
      "0x12/0x01",
      "0x12/0x03",
    ],
  },
  // Apollo Lake, Denverton
  { errata: ["apl12", "apl11"], cpus: ["6/0x5c", "6/0x5f"] },
  // Gemini Lake, Tremont and later Atom cores
  { errata: ["apl11"], cpus: ["6/0x7a", "6/0x86", "6/0x96", "6/0x9c", "6/0xb6", "6/0xaf", "6/0xdd"] },
];

const BY_CPU: ReadonlyMap<string, readonly ErratumName[]> = new Map(
  GROUPS.flatMap((g) =>
    g.cpus.map((c) => {
      const [f, m] = c.split("/").map((x) => Number(x));
      return [`${f}/${m}`, g.errata] as const;
    }),
  ),
);

export function noErrata(): Errata {
  return Object.fromEntries(ERRATA_NAMES.map((n) => [n, false])) as Errata;
}

/** The errata of `cpu`, or undefined when the CPU is not known. */
export function cpuErrata(cpu: Cpu): Errata | undefined {
  const names = BY_CPU.get(`${cpu.family}/${cpu.model}`);
  if (!names) return undefined;
  const errata = noErrata();
  for (const n of names) errata[n] = true;
  return errata;
}

/** Parse "family/model[/stepping]" (each a C integer); undefined if malformed or out of range. */
export function parseCpu(text: string): Cpu | undefined {
  const parts = text.split("/");
  if (parts.length < 2 || parts.length > 3) return undefined;
  const [family, model, stepping = 0] = parts.map(parseCInt);
  if (family === undefined || model === undefined || stepping === undefined) return undefined;
  if (family > 0xffff || model > 0xff || stepping > 0xff) return undefined;
  return { family, model, stepping };
}

/** The packet decoder's {@link DecodeQuirk} bits for a set of errata. */
export function packetQuirks(errata: Errata): number {
  return (errata.skd007 ? DecodeQuirk.Skd007 : 0) | (errata.skz84 ? DecodeQuirk.Skz84 : 0);
}

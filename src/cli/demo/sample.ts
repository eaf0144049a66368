/**
 * The bundled sample (sample/ in the repository, see its README.md): a small
 * program, its Intel PT trace made by ptkit's model of the trace unit, and
 * sample.json saying how they were made and how to decode them.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type DecoderConfig, defaultDecoderConfig } from "../../event/index.js";
import type { SessionIo } from "../../session/io.js";

/**
 * sample/ of the repository, beside its package.json: the first directory above this
 * module that has one (this file runs from dist*\/src/cli/, or bundled into the
 * executable's chunks in dist*\/cli/).
 */
export const BUNDLED_SAMPLE = join(packageRoot(dirname(fileURLToPath(import.meta.url))), "sample");

function packageRoot(from: string): string {
  for (let dir = from; dirname(dir) !== dir; dir = dirname(dir))
    if (existsSync(join(dir, "package.json"))) return dir;
  return resolve(from, "..", "..", "..");
}

export interface Sample {
  dir: string;
  /** File names in `dir`. */
  source: string;
  program: string;
  trace: string;
  elfBytes: Uint8Array;
  traceBytes: Uint8Array;
  config: DecoderConfig;
  /** The trace unit's configuration, as sample.json states it. */
  cpu: string;
  ctl: string;
  /** The whole sample.json. */
  description: Record<string, unknown>;
}

function field(o: unknown, key: string): unknown {
  return typeof o === "object" && o !== null ? (o as Record<string, unknown>)[key] : undefined;
}

function fileName(o: unknown, key: string): string {
  const v = field(o, key);
  // A bare name: the description must not point outside its directory.
  if (typeof v !== "string" || v === "" || /[/\\]/.test(v)) throw new Error(`"${key}" is not a file name`);
  return v;
}

function count(o: unknown, key: string): number {
  const v = field(o, key);
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 0xffffffff)
    throw new Error(`"decode.${key}" is not a 32-bit count`);
  return v;
}

/** Load the sample in `dir`; a message saying what is wrong and what to do otherwise. */
export function loadSample(io: SessionIo, dir: string): Sample | string {
  const jsonPath = join(dir, "sample.json");
  let description: Record<string, unknown>;
  try {
    description = JSON.parse(new TextDecoder().decode(io.readFile(jsonPath)));
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === "ENOENT";
    return missing
      ? `no sample at ${resolve(io.cwd, dir)} (${jsonPath} is missing). The sample ships in ptkit's ` +
          "repository (sample/): run this from a checkout, or give --sample <dir>"
      : `${jsonPath}: ${(e as Error).message}`;
  }
  let names: { source: string; program: string; trace: string };
  let config: DecoderConfig;
  try {
    names = {
      source: fileName(description, "source"),
      program: fileName(description, "program"),
      trace: fileName(description, "trace"),
    };
    const decode = field(description, "decode");
    config = {
      ...defaultDecoderConfig(),
      mtcFreq: count(decode, "mtcFreq"),
      nomFreq: count(decode, "nomFreq"),
      cpuid15Eax: count(decode, "cpuid15Eax"),
      cpuid15Ebx: count(decode, "cpuid15Ebx"),
    };
  } catch (e) {
    return `${jsonPath}: ${(e as Error).message}`;
  }
  const read = (name: string): Uint8Array | string => {
    try {
      return io.readFile(join(dir, name));
    } catch (e) {
      return `cannot read ${join(dir, name)} (named in ${jsonPath}): ${(e as Error).message}`;
    }
  };
  const elfBytes = read(names.program);
  if (typeof elfBytes === "string") return elfBytes;
  const traceBytes = read(names.trace);
  if (typeof traceBytes === "string") return traceBytes;
  const unit = field(description, "traceUnit");
  return {
    dir,
    ...names,
    elfBytes,
    traceBytes,
    config,
    cpu: String(field(unit, "cpu") ?? "?"),
    ctl: String(field(field(unit, "msrs"), "IA32_RTIT_CTL") ?? "?"),
    description,
  };
}

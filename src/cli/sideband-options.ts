/**
 * libipt's sideband options, shared by `ptkit dump` and `ptkit flow`: `--sb:*` choose
 * how records are printed, `--pevent:*` set the parameters of the pevent channels that
 * later `--pevent:primary/secondary file[:from[-to]]` add (each takes the parameters as
 * they are at that point, like libipt's tools).
 */
import { SidebandFormat } from "../perf/sideband-format.js";
import type { SidebandOptions, SidebandTool } from "../session/sideband-config.js";
import { numberArg, parseCUintMax } from "./numbers.js";

const U64_MAX = 0xffff_ffff_ffff_ffffn;

type NumberKey = "sampleType" | "timeZero" | "timeShift" | "timeMult" | "tscOffset" | "kernelStart";
const NUMBERS: Record<string, { key: NumberKey; max: bigint }> = {
  "--pevent:sample-type": { key: "sampleType", max: U64_MAX },
  "--pevent:time-zero": { key: "timeZero", max: U64_MAX },
  "--pevent:time-shift": { key: "timeShift", max: 0xffffn },
  "--pevent:time-mult": { key: "timeMult", max: 0xffffffffn },
  "--pevent:tsc-offset": { key: "tscOffset", max: U64_MAX },
  "--pevent:kernel-start": { key: "kernelStart", max: U64_MAX },
};

type PathKey = "sysroot" | "vdsoX64" | "vdsoX32" | "vdsoIa32";
const PATHS: Record<string, PathKey> = {
  "--pevent:sysroot": "sysroot",
  "--pevent:vdso-x64": "vdsoX64",
  "--pevent:vdso-x32": "vdsoX32",
  "--pevent:vdso-ia32": "vdsoIa32",
};

/**
 * Apply the sideband option at argv[i] to `o`: the number of arguments used, an error
 * message, or 0 when argv[i] is not a sideband option.
 */
export function parseSidebandOption(
  o: SidebandOptions,
  argv: readonly string[],
  i: number,
  tool: SidebandTool,
): number | string {
  const arg = argv[i]!;
  const value = argv[i + 1];
  const p = o.print;
  switch (arg) {
    case "--sb":
    case "--sb:compact":
      p.format = SidebandFormat.Compact;
      return 1;
    case "--sb:verbose":
      p.format = SidebandFormat.Verbose;
      return 1;
    case "--sb:filename":
      p.filename = true;
      return 1;
    case "--sb:offset":
      p.offset = true;
      return 1;
    case "--sb:time":
      p.time = true;
      return 1;
    case "--sb:warn":
      o.warn = true;
      return 1;
    case "--sb:switch":
      if (tool !== "flow") return 0;
      o.showSwitch = true;
      return 1;
    case "--pevent":
    case "--pevent:primary":
    case "--pevent:secondary":
      if (arg === "--pevent" && tool !== "dump") return 0;
      if (value === undefined) return `${arg}: missing argument.`;
      o.channels.push({
        arg: value,
        primary: arg !== "--pevent:secondary",
        params: { ...o.params, sampleConfig: [...o.params.sampleConfig] },
      });
      return 2;
    case "--pevent:sample-config": {
      const entry = value === undefined ? undefined : sampleConfigEntry(value);
      if (!entry) return `${arg}: bad sample config: ${value ?? "missing argument"}.`;
      o.params.sampleConfig.push(entry);
      return 2;
    }
    case "--pevent:kcore":
      // ptdump takes and ignores it; ptkit flow loads it as a step, in order.
      if (tool !== "dump") return 0;
      return value === undefined ? `${arg}: missing argument.` : 2;
  }
  const path = PATHS[arg];
  if (path) {
    if (value === undefined) return `${arg}: missing argument.`;
    // ptdump takes and ignores them.
    if (tool === "flow") o.params[path] = value;
    return 2;
  }
  const num = NUMBERS[arg];
  if (num) {
    const v = numberArg(arg, value, num.max);
    if (typeof v === "string") return v;
    if (num.key === "sampleType" || num.key === "timeShift") {
      if (num.key === "sampleType" && v > 0xffffffffn)
        return `${arg}: sample types above 32 bits are not supported: ${value}.`;
      o.params[num.key] = Number(v);
    } else o.params[num.key] = v;
    return 2;
  }
  return 0;
}

/** `id:sample-type` (C numbers), or undefined when malformed or the type is above 32 bits. */
function sampleConfigEntry(text: string): [bigint, number] | undefined {
  const colon = text.indexOf(":");
  if (colon < 0) return undefined;
  const id = parseCUintMax(text.slice(0, colon), U64_MAX);
  const type = parseCUintMax(text.slice(colon + 1), 0xffffffffn);
  if (typeof id !== "bigint" || typeof type !== "bigint") return undefined;
  return [id, Number(type)];
}

/**
 * A trace unit configuration given in `ptkit simulate`'s words (`--user --tsc --mtc 3`,
 * `--cpu broadwell`), for the benchmarks and tools that describe their traces the way
 * a user would type them: parsed with node:util's parser over the unit layer's option
 * table, then the unit's own WRMSRs (src/unit/settings.ts).
 */
import { parseArgs } from "node:util";
import { type PresetName, presetNamed } from "../unit/presets.js";
import { type MsrWrite, TRACE_OPTIONS, type TraceOptionValues, traceWrites } from "../unit/settings.js";

/** The preset and the WRMSRs `words` ask for, or what is wrong with them. */
export function traceWordsWrites(
  words: readonly string[],
): { preset: PresetName; writes: MsrWrite[] } | string {
  let values: TraceOptionValues;
  try {
    values = parseArgs({
      args: [...words],
      options: { ...TRACE_OPTIONS, cpu: { type: "string" } },
      strict: true,
    }).values as TraceOptionValues;
  } catch (e) {
    return (e as Error).message;
  }
  const named = presetNamed(values.cpu as string | undefined);
  if ("error" in named) return named.error;
  const { preset } = named;
  const writes = traceWrites(values, preset);
  return typeof writes === "string" ? writes : { preset, writes };
}

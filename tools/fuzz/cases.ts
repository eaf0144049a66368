/**
 * Case `index` of a campaign: its format (round robin), seed, mutations, and the
 * extra checks it carries (a `:from-to` range with different bytes past `to`, bytes
 * appended to a perf.data file, a directory for the input, the real process).
 */
import { mutate } from "./mutate.js";
import { Rng } from "./prng.js";
import type { Format, Seed } from "./seeds.js";
import { type Case, INPUT, SCRATCH } from "./types.js";

export function makeCase(
  seeds: Record<Format, Seed[]>,
  formats: readonly Format[],
  campaignSeed: number,
  index: number,
): Case {
  const rng = new Rng(campaignSeed, index);
  const format = formatOf(formats, index);
  const pool = format === "cli" ? cliPool(rng, seeds.cli) : seeds[format];
  const seed = rng.pick(pool);
  const other = rng.pick(pool).bytes;
  const m = mutate(rng, seed.bytes, other);
  const c: Case = {
    index,
    format,
    seed: seed.name,
    what: m.what,
    input: m.bytes,
    inputName: seed.inputName,
    cwd: seed.cwd,
  };
  if (seed.driver && format !== "cli") c.driver = seed.driver;
  if (seed.argv) c.argv = decoderOptions(rng, seed.argv);
  if (format === "cli") {
    c.process = true;
    if (seed.pipe && rng.chance(0.5)) c.stdin = true;
  }
  if (c.argv && !c.stdin && rng.chance(0.02)) c.inputIsDir = true;
  else if (c.argv && seed.rangeable && m.bytes.length > 0 && rng.chance(0.25)) pastRange(rng, c);
  // Only `perf`: perf-dump prints the file's size.
  else if (
    c.argv &&
    seed.appendable &&
    c.argv[0] === "perf" &&
    perfDeclaredEnd(m.bytes) <= m.bytes.length &&
    rng.chance(0.25)
  )
    pastFileEnd(rng, c);
  return c;
}

/**
 * The format of case `index`: the in-process formats in turn, and a real process
 * (`cli`, which costs a Node start-up) once every {@link CLI_EVERY} rounds.
 */
export function formatOf(formats: readonly Format[], index: number): Format {
  const inProcess = formats.filter((f) => f !== "cli");
  if (inProcess.length === 0) return "cli";
  if (inProcess.length === formats.length) return inProcess[index % inProcess.length]!;
  const cycle = CLI_EVERY * inProcess.length + 1;
  const at = index % cycle;
  return at === cycle - 1 ? "cli" : inProcess[at % inProcess.length]!;
}

export const CLI_EVERY = 3;

/** The real process takes each format's seeds in turn (not each seed: ptt has most of them). */
function cliPool(rng: Rng, cli: readonly Seed[]): Seed[] {
  const from = rng.pick([...new Set(cli.map((s) => s.from))]);
  return cli.filter((s) => s.from === from);
}

/**
 * Flow options that change how errors are handled (--resync-on-error half the time)
 * and what decodes: a quarter of the time only coverage (with folded stacks in some),
 * outputs with time, or only the instruction count is asked for, which the fast
 * decode (analysis/coverage-decode.ts, its timed walk for the times) takes on (the
 * files go nowhere, or to the scratch directory).
 */
function decoderOptions(rng: Rng, argv: string[]): string[] {
  if (argv[0] !== "flow") return argv;
  let out = argv;
  if (rng.chance(0.25)) {
    // The map alone, with the tables, with folded stacks (fed to the call-stack
    // tracker), or the count alone (with no decoder named).
    const more = rng.pick([
      ["--afl-map", "/dev/null"],
      ["--afl-map", "/dev/null", "--edges", "/dev/null"],
      ["--afl-map", "/dev/null", "--folded", "/dev/null"],
      // (Files, not /dev/null: the timed walk takes only outputs it can empty again.)
      ["--timeline", `${SCRATCH}/t.json`, "--folded", `${SCRATCH}/f.txt`, "--folded-weight", "time"],
      ["--stat:insn"],
    ]);
    const dropped = new Set(["--check", "--stat", "--block-decoder", "--insn-decoder"]);
    out = [...out.filter((a) => !dropped.has(a)), "--quiet", ...more];
  }
  if (out.includes("--resync-on-error") || !rng.chance(0.5)) return out;
  return [out[0]!, "--resync-on-error", ...out.slice(1)];
}

/** Read the input as `file:0x0-0xTO`; the variant has other bytes past TO. */
function pastRange(rng: Rng, c: Case): void {
  const n = c.input.length;
  const to = rng.range(1, n);
  const tail = new Uint8Array(rng.range(0, 64));
  for (let i = 0; i < tail.length; i++) tail[i] = rng.u32() & 0xff;
  const variant = new Uint8Array(to + tail.length);
  variant.set(c.input.subarray(0, to));
  variant.set(tail, to);
  c.argv = c.argv!.map((a) => (a === INPUT ? `${INPUT}:0x0-0x${to.toString(16)}` : a));
  c.variant = variant;
}

/** The variant has bytes appended after everything the perf.data header declares. */
function pastFileEnd(rng: Rng, c: Case): void {
  const extra = rng.range(1, 256);
  const variant = new Uint8Array(c.input.length + extra);
  variant.set(c.input);
  for (let i = c.input.length; i < variant.length; i++) variant[i] = rng.u32() & 0xff;
  c.variant = variant;
}

/**
 * Where a perf.data file's declared contents end: past the attrs, the data section and
 * the feature sections (whose table follows the data); Infinity when it is not a
 * perf.data file in file mode, its data runs to the end of the file, or the table runs
 * past the bytes there are.
 */
export function perfDeclaredEnd(bytes: Uint8Array): number {
  if (bytes.length < 104 || new TextDecoder().decode(bytes.subarray(0, 8)) !== "PERFILE2") return Infinity;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u64 = (at: number) => view.getUint32(at + 4, true) * 0x1_0000_0000 + view.getUint32(at, true);
  const headerSize = u64(8);
  // A data size of 0 means "to the end of the file" (a perf record that did not finish).
  if (headerSize < 104 || u64(48) === 0) return Infinity;
  let end = Math.max(headerSize, u64(24) + u64(32), u64(40) + u64(48));
  // The feature bitmap (256 bits at 72) says how many {offset, size} entries the table has.
  let features = 0;
  for (let i = 0; i < 32; i++) for (let b = bytes[72 + i]!; b !== 0; b &= b - 1) features++;
  const table = u64(40) + u64(48);
  if (table + 16 * features > bytes.length) return Infinity;
  end = Math.max(end, table + 16 * features);
  for (let i = 0; i < features; i++) end = Math.max(end, u64(table + 16 * i) + u64(table + 16 * i + 8));
  return end;
}

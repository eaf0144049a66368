/**
 * speedscope (npm `speedscope`, a profile viewer with an importer for Chrome's trace
 * event format) as the real trace viewer ptkit's timelines are checked with and shown
 * in: its release build is served from 127.0.0.1 and opens a timeline by URL.
 * Chromium's own viewer (chrome://tracing) no longer loads in current Chromium, and the
 * Perfetto UI is a web app that is not available offline.
 *
 * What speedscope parsed is read back from its "Sandwich" view, a table (HTML, unlike
 * the canvas of the other views) of every function with its total and self time.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Page } from "playwright-core";
import { type ServedFile, servedFile } from "./chromium.js";

const SPEEDSCOPE_DIR = join(
  dirname(createRequire(import.meta.url).resolve("speedscope/package.json")),
  "dist",
  "release",
);

/** speedscope's release files, to serve under `/speedscope/`. */
export function speedscopeFiles(): Map<string, ServedFile> {
  const files = new Map<string, ServedFile>();
  for (const name of readdirSync(SPEEDSCOPE_DIR)) {
    files.set(`/speedscope/${name}`, servedFile(name, readFileSync(join(SPEEDSCOPE_DIR, name))));
  }
  return files;
}

/**
 * Open `profileUrl` in speedscope (served at `baseUrl`/speedscope/) with `title` in its
 * toolbar and wait until it has imported and drawn it. Returns the importer speedscope
 * chose (from its console: "Trace Event Format" for a trace-event file).
 */
export async function openInSpeedscope(
  page: Page,
  baseUrl: string,
  profileUrl: string,
  title: string,
): Promise<string> {
  const imported = page.waitForEvent("console", {
    predicate: (m) => m.text().startsWith("Importing as "),
    timeout: 20_000,
  });
  const hash = `profileURL=${encodeURIComponent(profileUrl)}&title=${encodeURIComponent(title)}`;
  await page.goto(`${baseUrl}speedscope/index.html#${hash}`);
  const importer = /^Importing as (.*) profile$/.exec((await imported).text())?.[1] ?? "";
  await page.getByText("Time Order").waitFor({ timeout: 20_000 });
  await page.locator("canvas").first().waitFor({ timeout: 20_000 });
  return importer;
}

/** One row of the Sandwich table: times in microseconds, with the precision shown. */
export interface SandwichRow {
  name: string;
  total: number;
  self: number;
  /** Half a unit of the last digit shown, in microseconds (the larger of the two cells). */
  precision: number;
}

const UNITS: Record<string, number> = { ns: 1e-3, µs: 1, ms: 1e3, s: 1e6 };

/** "250.00µs (50%)": the time in microseconds and half its last digit's unit. */
function cellTime(cell: string): { us: number; precision: number } {
  const m = /^(\d+)(?:\.(\d+))?(ns|µs|ms|s)\b/.exec(cell.trim());
  if (!m) throw new Error(`speedscope showed an unexpected time: ${cell}`);
  const unit = UNITS[m[3]!]!;
  const decimals = m[2]?.length ?? 0;
  return { us: Number(`${m[1]}.${m[2] ?? 0}`) * unit, precision: (0.5 * unit) / 10 ** decimals };
}

/** Every function of the profile shown, from the Sandwich view; goes back to Time Order. */
export async function readSandwich(page: Pick<Page, "getByText" | "locator">): Promise<SandwichRow[]> {
  await page.getByText("Sandwich").click();
  await page.locator("tr:has(td)").first().waitFor({ timeout: 20_000 });
  const rows: SandwichRow[] = [];
  for (const row of await page.locator("tr:has(td)").all()) {
    const [total, self, name] = await row.locator("td").allTextContents();
    const t = cellTime(total!);
    const s = cellTime(self!);
    rows.push({ name: name!, total: t.us, self: s.us, precision: Math.max(t.precision, s.precision) });
  }
  await page.getByText("Time Order").click();
  return rows;
}

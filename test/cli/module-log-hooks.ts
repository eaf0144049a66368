/**
 * Module loader hooks for {@link ./module-log.ts}: every ES module the process loads
 * (its URL), one a line, appended to the file named by $PTKIT_MODULE_LOG.
 */
import { appendFileSync } from "node:fs";

interface LoadResult {
  format?: string | null;
  source?: unknown;
}

export async function load(
  url: string,
  context: object,
  nextLoad: (url: string, context: object) => Promise<LoadResult>,
): Promise<LoadResult> {
  const log = process.env.PTKIT_MODULE_LOG;
  if (log) appendFileSync(log, `${url}\n`);
  return nextLoad(url, context);
}

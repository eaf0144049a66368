/**
 * Where ptkit keeps files between runs by default: `$XDG_CACHE_HOME/ptkit`, else
 * `~/.cache/ptkit` (decision graphs: graph-store.ts; compiled code where the bundle's
 * own folder cannot be written: code-cache.ts).
 */
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * The user's ptkit cache folder, or "" where there is no home to put it in, and under
 * `node --test` (NODE_TEST_CONTEXT): tests never share files through the host's home.
 */
export function userCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.NODE_TEST_CONTEXT !== undefined) return "";
  const home = env.HOME || userHome();
  const base = env.XDG_CACHE_HOME || (home ? join(home, ".cache") : "");
  return base === "" ? "" : join(base, "ptkit");
}

/** The user's home from the password database, or "" (os.homedir throws when there is none). */
function userHome(): string {
  try {
    return homedir();
  } catch {
    return "";
  }
}

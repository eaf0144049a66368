/**
 * POSIX paths without Node's `path` module (the session layer runs in browsers too):
 * what `path.resolve(cwd, path)` gives for the paths ptkit names in its messages.
 */

/** `path` made absolute against `cwd` and normalised: `.`, `..` and repeated slashes gone. */
export function resolvePath(cwd: string, path: string): string {
  const parts: string[] = [];
  for (const part of (path.startsWith("/") ? path : `${cwd}/${path}`).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

/**
 * quipper's protobuf text dumps (`*.pb_text`) of perf.data files: each top-level
 * `events { ... }` block flattened to `path: value` pairs (`comm_event.pid`,
 * `mmap_event.sample_info.cpu`), strings unquoted. Only what the tests compare.
 */
export type PbEvent = Map<string, string>;

export function pbEvents(text: string): PbEvent[] {
  const events: PbEvent[] = [];
  let current: PbEvent | undefined;
  const path: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (raw === "events {") {
      current = new Map();
      path.length = 0;
      continue;
    }
    if (!current) continue;
    if (raw === "}") {
      events.push(current);
      current = undefined;
    } else if (line.endsWith("{")) {
      path.push(line.slice(0, -1).trim());
    } else if (line === "}") {
      path.pop();
    } else {
      const colon = line.indexOf(":");
      const key = [...path, line.slice(0, colon)].join(".");
      let value = line.slice(colon + 1).trim();
      if (value.startsWith('"')) value = value.slice(1, -1);
      if (!current.has(key)) current.set(key, value);
    }
  }
  return events;
}

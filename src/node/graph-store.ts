/**
 * Decision graphs kept in files between runs ({@link GraphStore}), one per code: in
 * `$PTKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/ptkit`, else `~/.cache/ptkit`. The key
 * is a SHA-256 of the build and every section's address, size and bytes (the part of
 * the file each maps, hashed once per process: not the rest of the file, such as its
 * DWARF, which a file read in part has as zeros), so a changed binary, another load address or
 * another build of ptkit never meets an old graph (and one of another format is
 * refused when read: flow/graph-snapshot.ts). Files are written
 * under a temporary name and renamed (a reader never sees half a file), and the
 * oldest go when the directory holds more than {@link CACHE_BYTES}. Nothing here is
 * ever an error: a cache that cannot be read or written is a cache that misses.
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Image } from "../image/index.js";
import type { GraphStore } from "../session/io.js";
import { userCacheDir } from "./cache-dir.js";
import { lazyBuiltin } from "./lazy-builtin.js";

/** The directory's size at most: past it, the least recently used graphs go. */
export const CACHE_BYTES = 512 * 1024 * 1024;
/** A graph's file at most (readGraph refuses more nodes than fit in it). */
const MAX_FILE = 320 * 1024 * 1024;
/** Code larger than this is not hashed for a key (its graph is made afresh each run). */
const MAX_HASHED = 512 * 1024 * 1024;

/**
 * The store the environment asks for: `PTKIT_CACHE_DIR` names the directory (empty or
 * `off`: no cache); under `node --test` (NODE_TEST_CONTEXT) there is none unless it is
 * named, so that tests never share graphs through the host's home.
 */
export function graphStoreFromEnv(env: NodeJS.ProcessEnv = process.env): GraphStore | undefined {
  const named = env.PTKIT_CACHE_DIR;
  if (named !== undefined) return named === "" || named === "off" ? undefined : new FileGraphStore(named);
  const dir = userCacheDir(env);
  return dir === "" ? undefined : new FileGraphStore(dir);
}

export class FileGraphStore implements GraphStore {
  /** Digests of ranges of each backing buffer (the processes that map one file share them). */
  private readonly digests = new WeakMap<Uint8Array, Map<string, string>>();
  /** {@link buildId}, taken at the first key (most commands never ask for one). */
  private build: string | undefined;

  constructor(
    readonly dir: string,
    private readonly capBytes = CACHE_BYTES,
  ) {}

  key(image: Image): string | undefined {
    const { createHash } = crypto();
    const h = createHash("sha256");
    this.build ??= buildId();
    h.update(`ptkit decision graph ${this.build}\n`);
    let hashed = 0;
    for (let img: Image | null = image; img !== null; img = img.fallback) {
      h.update("image\n");
      for (const s of img.sections) {
        h.update(`${s.startHi} ${s.startLo} ${s.size} ${s.offset} `);
        if (s.bytes === null) {
          h.update("zero\n");
          continue;
        }
        let ranges = this.digests.get(s.bytes);
        if (ranges === undefined) {
          ranges = new Map();
          this.digests.set(s.bytes, ranges);
        }
        const range = `${s.offset} ${s.size}`;
        let d = ranges.get(range);
        if (d === undefined) {
          hashed += s.size;
          if (hashed > MAX_HASHED) return undefined;
          d = createHash("sha256")
            .update(s.bytes.subarray(s.offset, s.offset + s.size))
            .digest("hex");
          ranges.set(range, d);
        }
        h.update(`${d}\n`);
      }
    }
    return h.digest("hex").slice(0, 40);
  }

  load(key: string): Uint8Array | undefined {
    const path = this.path(key);
    try {
      // A graph holds fewer than 2^22 nodes (under 300 MiB): a larger file is not one.
      if (statSync(path).size > MAX_FILE) return undefined;
      const bytes = readFileSync(path);
      // Used now: the last to go (the age the size cap goes by).
      const now = new Date();
      utimesSync(path, now, now);
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
    } catch {
      return undefined;
    }
  }

  save(key: string, bytes: Uint8Array): void {
    const path = this.path(key);
    const temp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      writeFileSync(temp, bytes);
      renameSync(temp, path);
      this.trim();
    } catch {
      try {
        unlinkSync(temp);
      } catch {}
    }
  }

  private path(key: string): string {
    return join(this.dir, `${key}.graph`);
  }

  /**
   * The least recently used graphs removed until the directory is within its cap, and
   * temporary files an hour old (a run killed while writing).
   */
  private trim(): void {
    const files: { path: string; size: number; used: number }[] = [];
    let total = 0;
    const stale = Date.now() - 3600_000;
    for (const name of readdirSync(this.dir)) {
      const graph = name.endsWith(".graph");
      if (!graph && !name.endsWith(".tmp")) continue;
      const path = join(this.dir, name);
      try {
        const st = statSync(path);
        if (graph) {
          files.push({ path, size: st.size, used: st.mtimeMs });
          total += st.size;
        } else if (st.mtimeMs < stale) unlinkSync(path);
      } catch {}
    }
    if (total <= this.capBytes) return;
    files.sort((a, b) => a.used - b.used);
    for (const f of files) {
      if (total <= this.capBytes) break;
      try {
        unlinkSync(f.path);
        total -= f.size;
      } catch {}
    }
  }
}

/** node:crypto, loaded when a graph is first looked for (most commands never do: start-up). */
const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

/**
 * This build of ptkit: the name, size and time of writing (to the millisecond) of each
 * script in this module's folder. The bundle's folder holds all of ptkit (its
 * decoding threads load this module from another file there, and get the same), so
 * any rebuild changes it; tsc's output of other layers lies elsewhere, so a change to
 * what makes a node must also raise the graph format (flow/decision-graph.ts), which
 * a graph's file carries.
 */
function buildId(): string {
  const folder = dirname(fileURLToPath(import.meta.url));
  try {
    const parts: string[] = [];
    for (const name of readdirSync(folder).sort()) {
      if (!name.endsWith(".js") && !name.endsWith(".cjs")) continue;
      const st = statSync(join(folder, name));
      parts.push(`${name}:${st.size}:${Math.floor(st.mtimeMs)}`);
    }
    return parts.join(" ");
  } catch {
    return "?";
  }
}

/**
 * Assembles the WebAssembly map loop (src/analysis/wasm/map-loop.wat) with wabt and
 * writes its bytes into src/analysis/wasm/map-loop-wasm.ts, which the library loads
 * (no file to fetch or read at run time: the same code in Node and in a browser).
 * Run it after changing the .wat; test/analysis/map-loop-wasm.test.ts fails while the
 * two differ.
 *
 *   npx tsc -p tsconfig.json && node dist/tools/build/map-loop-wasm.js
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import wabtInit from "wabt";

/** The repository root (this file runs from <root>/dist/tools/build/). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const WAT_PATH = resolve(ROOT, "src/analysis/wasm/map-loop.wat");
const TS_PATH = resolve(ROOT, "src/analysis/wasm/map-loop-wasm.ts");

/** The module's bytes, assembled from `wat`. */
export async function assembleMapLoop(wat: string): Promise<Uint8Array> {
  const wabt = await wabtInit();
  const module = wabt.parseWat("map-loop.wat", wat);
  try {
    module.resolveNames();
    module.validate();
    return new Uint8Array(module.toBinary({}).buffer);
  } finally {
    module.destroy();
  }
}

/** map-loop-wasm.ts's text for the module `bytes`. */
export function mapLoopSource(bytes: Uint8Array): string {
  const base64 = Buffer.from(bytes).toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < base64.length; i += 96) lines.push(`  "${base64.slice(i, i + 96)}"`);
  return `/**
 * The WebAssembly map loop's module (map-loop.wat), ${bytes.length} bytes in base64:
 * written by tools/build/map-loop-wasm.ts, not by hand.
 */
export const MAP_LOOP_WASM_BASE64 =
${lines.join(" +\n")};
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bytes = await assembleMapLoop(readFileSync(WAT_PATH, "utf8"));
  writeFileSync(TS_PATH, mapLoopSource(bytes));
  console.log(`wrote ${TS_PATH}: ${bytes.length} bytes`);
}

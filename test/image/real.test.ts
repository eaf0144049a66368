/**
 * The ELF reader on this machine's binaries, cross-checked against binutils' readelf
 * (`-lW` for PT_LOAD, `-SW` for sections, `-n` for the build-id, `-h` for type and
 * entry). Skips what is absent.
 */
// test:quick skips this file: reads the host's system binaries.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { buildIdHex, type ElfFile, parseElf, segmentFlagsString } from "../../src/image/elf.js";
import { Image, ImageHit } from "../../src/image/image.js";
import { big } from "./helpers.js";

const BINARIES = ["/bin/ls", "/usr/lib/x86_64-linux-gnu/libc.so.6"];

function hasReadelf(): boolean {
  try {
    execFileSync("readelf", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const READELF = hasReadelf();

function readelf(args: string[], path: string): string {
  return execFileSync("readelf", [...args, path], { encoding: "utf8", maxBuffer: 64 << 20 });
}

/** PT_LOAD rows as readelf -lW prints them. */
function readelfLoads(path: string): string[] {
  const rows: string[] = [];
  for (const line of readelf(["-lW"], path).split("\n")) {
    const m =
      /^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+([RWE ]{3})\s+(0x[0-9a-f]+)\s*$/.exec(
        line,
      );
    if (m)
      rows.push(
        m
          .slice(1)
          .map((x) => (x.startsWith("0x") ? BigInt(x).toString(16) : x))
          .join(" "),
      );
  }
  return rows;
}

function ourLoads(elf: ElfFile): string[] {
  return elf.loads.map((s) =>
    [
      s.offset.toString(16),
      big(s.vaddrHi, s.vaddrLo).toString(16),
      big(s.paddrHi, s.paddrLo).toString(16),
      s.filesz.toString(16),
      s.memsz.toString(16),
      segmentFlagsString(s.flags),
      s.align.toString(16),
    ].join(" "),
  );
}

/** [index, name, addr, offset, size] of every section but 0, from readelf -SW. */
function readelfSections(path: string): string[] {
  const rows: string[] = [];
  for (const line of readelf(["-SW"], path).split("\n")) {
    const m = /^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s/.exec(line);
    if (m && m[1] !== "0")
      rows.push([m[1], m[2], BigInt(`0x${m[3]}`), BigInt(`0x${m[4]}`), BigInt(`0x${m[5]}`)].join(" "));
  }
  return rows;
}

function ourSections(elf: ElfFile): string[] {
  return elf.sections
    .slice(1)
    .map((s) => [s.index, s.name, big(s.addrHi, s.addrLo), BigInt(s.offset), BigInt(s.size)].join(" "));
}

function crossCheck(path: string): ElfFile {
  const bytes = new Uint8Array(readFileSync(path));
  const elf = parseElf(bytes);
  assert.deepEqual(elf.warnings, []);
  if (READELF) {
    assert.deepEqual(ourLoads(elf), readelfLoads(path), `${path}: PT_LOAD`);
    assert.deepEqual(ourSections(elf), readelfSections(path), `${path}: sections`);
    const notes = readelf(["-n"], path);
    const id = /Build ID: ([0-9a-f]+)/.exec(notes)?.[1];
    assert.equal(buildIdHex(elf), id, `${path}: build-id`);
    const h = readelf(["-h"], path);
    const type = /Type:\s+(\w+)/.exec(h)![1];
    assert.equal({ 1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE" }[elf.type], type);
    const entry = /Entry point address:\s+(0x[0-9a-f]+)/.exec(h)![1]!;
    assert.equal(big(elf.entryHi, elf.entryLo), BigInt(entry));
  }
  return elf;
}

describe("system binaries", () => {
  for (const path of BINARIES) {
    test(`${path}: PT_LOAD, sections, build-id ${READELF ? "match readelf" : "(readelf absent: parse only)"}`, {
      skip: existsSync(path) ? false : `${path} is absent`,
    }, () => {
      const elf = crossCheck(path);
      assert.ok(elf.loads.length >= 2);
      assert.ok(elf.relocatable && elf.hasDynamic);
      assert.ok(elf.sections.some((s) => s.name === ".text"));
    });
  }

  test(`${path0()}: the image maps .text at a PIE base and reads the file's bytes`, {
    skip: existsSync(path0()) ? false : `${path0()} is absent`,
  }, () => {
    const bytes = new Uint8Array(readFileSync(path0()));
    const elf = parseElf(bytes);
    const image = new Image();
    const base = 0x555555554000n;
    assert.equal(
      image.addElf(elf, { name: "ls", baseHi: 0x5555, baseLo: 0x55554000 }),
      image.sections.length,
    );
    const text = elf.sections.find((s) => s.name === ".text")!;
    const addr = base + big(text.addrHi, text.addrLo);
    const out = new Uint8Array(text.size);
    const hi = Number(addr >> 32n);
    const lo = Number(addr & 0xffffffffn);
    assert.equal(image.read(hi, lo, out, out.length), out.length);
    assert.deepEqual(out, bytes.subarray(text.offset, text.offset + text.size));
    const hit = new ImageHit();
    assert.equal(image.find(hi, lo, hit), 0);
    assert.equal(hit.bytes, bytes);
    assert.equal(hit.offset, text.offset);
    assert.equal(image.find(0x5555, 0x55554000 - 1, hit), -13);
  });

  const dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/bin"];
  test("many shared objects and executables match readelf", {
    skip: !READELF ? "readelf is absent" : !dirs.some(existsSync) ? "no library directory" : false,
    timeout: 120_000,
  }, (t) => {
    let checked = 0;
    for (const dir of dirs.filter(existsSync)) {
      const files = readdirSync(dir).sort();
      let n = 0;
      for (const f of files) {
        if (n >= 60) break;
        const p = join(dir, f);
        let st: ReturnType<typeof statSync>;
        try {
          st = statSync(p);
        } catch {
          continue;
        }
        if (!st.isFile() || st.size < 64 || st.size > 64 << 20) continue;
        const head = readFileSync(p).subarray(0, 4);
        if (head[0] !== 0x7f || head[1] !== 0x45 || head[2] !== 0x4c || head[3] !== 0x46) continue;
        crossCheck(p);
        n++;
      }
      checked += n;
    }
    assert.ok(checked > 0);
    t.diagnostic(`${checked} ELF files matched readelf`);
  });
});

function path0(): string {
  return BINARIES[0]!;
}

/**
 * `ptkit perf --branches --sym` names each address as perf script -F
 * flags,ip,sym,symoff,dso,addr does (`name+0xoff (dso)`, `[unknown] ([unknown])` for
 * none): on a HASE capture the lines are perf script's reference lines with the
 * names added, and every name+offset is the address by nm's symbol table; kernel
 * names come from --vmlinux at its KASLR relocation, C++ names demangled as perf
 * script does (unless --no-demangle).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import { loopProgram, traceOf } from "./pt-file.js";

const HASE = "real/hase";
const RUN = "2018-05/control_flow-20180515T180451";
const RECORDED = "/home/joerg/git/hase/tests/bin/control_flow/control_flow";

function run(cwd: string, args: string[]): string {
  const io = captureIo(cwd);
  assert.equal(runPerf(args, io, EMPTY_HOME), 0, io.err.join(""));
  return io.out.join("");
}

/** nm's symbol addresses by name (a name may have several: local functions). */
function nmSymbols(path: string): Map<string, Set<bigint>> | undefined {
  const r = spawnSync("nm", [path], { encoding: "utf8" });
  if (r.status !== 0) return undefined;
  const out = new Map<string, Set<bigint>>();
  for (const line of r.stdout.split("\n")) {
    const m = /^([0-9a-f]+) \w (\S+)$/.exec(line);
    if (!m) continue;
    const set = out.get(m[2]!) ?? new Set<bigint>();
    set.add(BigInt(`0x${m[1]}`));
    out.set(m[2]!, set);
  }
  return out;
}

const LINE = /^( {2}.{23})( *[0-9a-f]+) (\S+) \((.*)\) => ( *[0-9a-f]+) (\S+) \((.*)\)$/;

test("--branches --sym: perf script's lines with name+0xoff (dso) after each address", {
  skip: skipUnlessCorpus(HASE, RUN),
}, (t) => {
  const binary = corpusPath(HASE, RUN, "binaries", RECORDED)!;
  const nm = nmSymbols(binary);
  if (!nm) return t.skip("nm is not installed");
  const out = run(corpusPath(HASE)!, [
    "--branches",
    "--sym",
    "--symfs",
    `${RUN}/binaries`,
    `${RUN}/perf.data.1`,
  ]);
  const lines = out.split("\n").filter((l) => l !== "");
  const reference = readFileSync(
    corpusPath(HASE, "reference", "control_flow-20180515.perf-script-branches.txt")!,
    "utf8",
  )
    .split("\n")
    .filter((l) => l.trim() !== "");
  assert.equal(lines.length, reference.length);
  let named = 0;
  lines.forEach((line, i) => {
    const m = LINE.exec(line);
    assert.ok(m, line);
    assert.equal(`${m[1]}${m[2]} => ${m[5]}`, reference[i]);
    for (const [ip, sym, dso] of [
      [m[2]!, m[3]!, m[4]!],
      [m[5]!, m[6]!, m[7]!],
    ] as const) {
      const addr = BigInt(`0x${ip.trim()}`);
      if (addr === 0n) {
        assert.equal(`${sym} (${dso})`, "[unknown] ([unknown])");
        continue;
      }
      assert.equal(dso, RECORDED);
      const s = /^(.+)\+0x([0-9a-f]+)$/.exec(sym);
      assert.ok(s, sym);
      assert.ok(nm.get(s[1]!)?.has(addr - BigInt(`0x${s[2]}`)), `${sym} is not ${ip} by nm`);
      named++;
    }
  });
  assert.ok(named > 300, `${named} names`);
  // The same names in JSON lines.
  const calls = run(corpusPath(HASE)!, [
    "--calls",
    "--sym",
    "--jsonl",
    "--symfs",
    `${RUN}/binaries`,
    `${RUN}/perf.data.1`,
  ])
    .split("\n")
    .filter((l) => l.includes('"type":"branch"'))
    .map((l) => JSON.parse(l) as { flags: string; fromSym: string; toSym: string })
    .filter((o) => o.flags === "call");
  assert.equal(calls[0]?.toSym, `_start_c+0x0 (${RECORDED})`);
  assert.equal(calls[0]?.fromSym, `_start+0x11 (${RECORDED})`);
});

test("--calls --sym: kernel names from --vmlinux at its relocation", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-sym-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const link = 0xffffffff81000000n;
  const runAt = link + 0x200000n;
  const { code, exec } = loopProgram(runAt, 3);
  writeFileSync(
    join(dir, "vmlinux"),
    elfWithSymbols(link, code, [
      { name: "_text", value: link, label: true },
      { name: "loop", value: link, size: 0x10 },
      { name: "_ZN4leaf2fnEv", value: link + 0x10n, size: 1 },
    ]),
  );
  const file = new PtFile()
    .kernelMmap("[kernel.kallsyms]_text", runAt, 0x1000000n, runAt)
    .comm(100, "loop", TRACE_TSC - 100n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec));
  writeFileSync(join(dir, "perf.data"), fileMode(file.built()));
  const lines = run(dir, ["--calls", "--sym", "--vmlinux", "vmlinux", "perf.data"])
    .split("\n")
    .filter(Boolean);
  assert.deepEqual(lines.slice(0, 2), [
    "  call                   ffffffff81200005 loop+0x5 ([kernel.kallsyms]) => ffffffff81200010 leaf::fn()+0x0 ([kernel.kallsyms])",
    "  return                 ffffffff81200010 leaf::fn()+0x0 ([kernel.kallsyms]) => ffffffff8120000a loop+0xa ([kernel.kallsyms])",
  ]);
  // Three turns of call and return, and where tracing ends (--calls shows it, as perf script --itrace=cr).
  assert.equal(lines.length, 7);
  assert.match(lines[6]!, /^ {2}tr end /);
  const raw = run(dir, ["--calls", "--sym", "--no-demangle", "--vmlinux", "vmlinux", "perf.data"]);
  assert.match(raw.split("\n")[0]!, / => ffffffff81200010 _ZN4leaf2fnEv\+0x0 \(\[kernel\.kallsyms\]\)$/);
});

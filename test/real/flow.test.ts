/**
 * `ptkit flow` on real Intel PT captures with their code (shared corpus `real/`, see its
 * README): the executed instructions must be exactly those two independent decoders
 * found, Debian's libipt 2.0.5 (`*.ptref-insn.txt.gz`: ip, size, class per line) and
 * perf 6.1 (`*.perf-script-insn.txt`: one ip per line), in order, with both of
 * ptkit's decoders; DynamoRIO's small capture must also disassemble to its test's
 * expected instructions (`test_simple.templatex`). Skips when the corpus is absent.
 *
 * The command lines below run from the capture's folder and can be copied as they are.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { main } from "../../src/cli/ptkit.js";
import { captureIo } from "../conformance/ptt.js";
import { CORPUS_DIR, DR_FLOW_ARGS, skipUnlessCorpus } from "../corpus.js";

interface Capture {
  name: string;
  /** Corpus folder the command runs in. */
  dir: string;
  /** `ptkit flow` options (the decoder is added per run). */
  argv: string[];
  /** libipt 2.0.5's instructions and events, relative to `dir`. */
  ptref: string;
  /** perf's instruction IPs, if perf decoded it. */
  perf?: string;
}

const HASE = "real/hase";
const DR = "real/dynamorio-drpt2trace";
const HASE_0515 = (run: string, prog: string) =>
  `2018-05/${run}/binaries/home/joerg/git/hase/tests/bin/${prog}/${prog}`;

const CAPTURES: Capture[] = [
  {
    name: "HASE control_flow 2018-04-04 (Skylake)",
    dir: HASE,
    // ptkit flow --cpu 6/94/3 --elf 2018-04-04/control_flow/control_flow --pt reference/control_flow-20180404-aux-idx1.bin
    argv: [
      "--cpu",
      "6/94/3",
      "--elf",
      "2018-04-04/control_flow/control_flow",
      "--pt",
      "reference/control_flow-20180404-aux-idx1.bin",
    ],
    ptref: "reference/control_flow-20180404-aux-idx1.ptref-insn.txt.gz",
    perf: "reference/control_flow-20180404.perf-script-insn.txt",
  },
  {
    name: "HASE loopy 2018-04-04 (Skylake)",
    dir: HASE,
    // ptkit flow --cpu 6/94/3 --elf 2018-04-04/loopy/loopy --pt reference/loopy-20180404-aux-idx2.bin
    argv: [
      "--cpu",
      "6/94/3",
      "--elf",
      "2018-04-04/loopy/loopy",
      "--pt",
      "reference/loopy-20180404-aux-idx2.bin",
    ],
    ptref: "reference/loopy-20180404-aux-idx2.ptref-insn.txt.gz",
    perf: "reference/loopy-20180404.perf-script-insn.txt",
  },
  {
    name: "HASE control_flow 2018-05-15 (Broadwell, snapshot mode)",
    dir: HASE,
    // ptkit flow --cpu 6/61/4 --elf 2018-05/control_flow-20180515T180451/binaries/home/joerg/git/hase/tests/bin/control_flow/control_flow --pt reference/control_flow-20180515-aux-idx1.bin
    argv: [
      "--cpu",
      "6/61/4",
      "--elf",
      HASE_0515("control_flow-20180515T180451", "control_flow"),
      "--pt",
      "reference/control_flow-20180515-aux-idx1.bin",
    ],
    ptref: "reference/control_flow-20180515-aux-idx1.ptref-insn.txt.gz",
    perf: "reference/control_flow-20180515.perf-script-insn.txt",
  },
  {
    name: "HASE loopy 2018-05-14 (Broadwell, snapshot mode)",
    dir: HASE,
    // ptkit flow --cpu 6/61/4 --elf 2018-05/loopy-20180514T145114/binaries/home/joerg/git/hase/tests/bin/loopy/loopy --pt reference/loopy-20180514-aux-idx1.bin
    argv: [
      "--cpu",
      "6/61/4",
      "--elf",
      HASE_0515("loopy-20180514T145114", "loopy"),
      "--pt",
      "reference/loopy-20180514-aux-idx1.bin",
    ],
    ptref: "reference/loopy-20180514-aux-idx1.ptref-insn.txt.gz",
    perf: "reference/loopy-20180514.perf-script-insn.txt",
  },
  {
    name: "DynamoRIO drpt2trace test_simple (Skylake-SP)",
    dir: DR,
    // ptkit flow --cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15.eax 2 --cpuid-0x15.ebx 308 --elf test_simple.raw/hello --pt test_simple.raw/pt.bin
    argv: [...DR_FLOW_ARGS, "--elf", "test_simple.raw/hello", "--pt", "test_simple.raw/pt.bin"],
    ptref: "reference/test_simple.ptref-insn.txt.gz",
  },
  {
    name: "DynamoRIO drpt2trace tracedir-2aad718 (Skylake-SP, 59,234 instructions)",
    dir: DR,
    // ptkit flow --cpu 6/85/7 --elf test_simple.tracedir-2aad718/hello --pt test_simple.tracedir-2aad718/pt.bin
    argv: [
      "--cpu",
      "6/85/7",
      "--elf",
      "test_simple.tracedir-2aad718/hello",
      "--pt",
      "test_simple.tracedir-2aad718/pt.bin",
    ],
    ptref: "reference/tracedir-2aad718.ptref-insn.txt.gz",
  },
];

/** One instruction line of ptkit flow with --raw-insn: the IP, the raw bytes and the assembly. */
interface FlowInsnLine {
  ip: string;
  size: number;
  asm: string;
}

interface FlowRun {
  insns: FlowInsnLine[];
  /** Event lines ("[enabled]", ...), in order. */
  events: string[];
}

async function runFlow(capture: Capture, decoder: string, extra: string[] = []): Promise<FlowRun> {
  const io = captureIo(join(CORPUS_DIR, capture.dir));
  const code = await main(["flow", decoder, "--raw-insn", ...extra, ...capture.argv], io);
  assert.equal(code, 0, io.err.join(""));
  const insns: FlowInsnLine[] = [];
  const events: string[] = [];
  for (const line of io.out.join("").split("\n")) {
    if (line === "") continue;
    if (line.startsWith("[")) {
      events.push(line);
      continue;
    }
    const m = /^([0-9a-f]{16})((?: [0-9a-f]{2})+)\s+(\S.*)$/.exec(line);
    assert.ok(m, `unexpected line: ${line}`);
    insns.push({ ip: BigInt(`0x${m[1]}`).toString(16), size: m[2]!.length / 3, asm: m[3]! });
  }
  return { insns, events };
}

/** libipt 2.0.5's instruction lines ("ip size") and event names, in order. */
function ptref(capture: Capture): { insns: string[]; events: string[] } {
  const text = gunzipSync(readFileSync(join(CORPUS_DIR, capture.dir, capture.ptref))).toString("utf8");
  const insns: string[] = [];
  const events: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("[event ")) events.push(line.slice(7).split(/[ \]]/)[0]!);
    else if (line !== "") {
      const [ip, size] = line.split(" ");
      insns.push(`${ip} ${size}`);
    }
  }
  return { insns, events };
}

const count = (list: readonly string[], pred: (s: string) => boolean) => list.filter(pred).length;

describe("ptkit flow on real captures (corpus/real)", { skip: skipUnlessCorpus("real") }, () => {
  for (const capture of CAPTURES) {
    for (const decoder of ["--block-decoder", "--insn-decoder"]) {
      test(`${capture.name}, ${decoder}`, async () => {
        const ours = await runFlow(capture, decoder);
        const ref = ptref(capture);
        assert.ok(ref.insns.length > 0);
        // Every instruction, in order, with its size (from the raw bytes printed).
        assert.deepEqual(
          ours.insns.map((i) => `${i.ip} ${i.size}`),
          ref.insns,
        );
        if (capture.perf) {
          const perf = readFileSync(join(CORPUS_DIR, capture.dir, capture.perf), "utf8")
            .split("\n")
            .map((l) => l.trim())
            .filter((l) => l !== "");
          assert.deepEqual(
            ours.insns.map((i) => i.ip),
            perf,
          );
        }
        // No decode errors, and tracing was enabled and disabled as often as libipt saw.
        assert.deepEqual(
          ours.events.filter((e) => /^\[[0-9a-f?]+, /.test(e)),
          [],
        );
        assert.equal(
          count(ours.events, (e) => e === "[enabled]" || e === "[resumed]"),
          count(ref.events, (e) => e === "enabled"),
        );
        assert.equal(
          count(ours.events, (e) => e === "[disabled]"),
          count(ref.events, (e) => e === "disabled" || e === "async_disabled"),
        );
        assert.ok(ours.insns.every((i) => i.asm !== "(bad)"));
      });
    }
  }

  test("DynamoRIO test_simple disassembles to drpt2trace's expected instructions", async () => {
    const capture = CAPTURES.find((c) => c.ptref.endsWith("test_simple.ptref-insn.txt.gz"))!;
    const { insns } = await runFlow(capture, "--block-decoder", ["--att"]);
    // Lines like ` \+10   L3 .* \$0x0000000000402000 -> %rsi`: offset, mnemonic or
    // immediate, destination register.
    const template = readFileSync(join(CORPUS_DIR, DR, "test_simple.templatex"), "utf8");
    const expected = [...template.matchAll(/^ \\\+(\d+)\s+L3 \.\* (.*)$/gm)].map((m) => {
      const text = m[2]!;
      return {
        offset: Number(m[1]),
        mnemonic: /^([a-z]+)\s/.exec(text)?.[1],
        imm: /\\\$0x([0-9a-f]+)/.exec(text)?.[1],
        dest: /-> (%[a-z0-9]+)$/.exec(text)?.[1],
      };
    });
    assert.equal(Number(/Number of Instructions: (\d+)/.exec(template)?.[1]), insns.length);
    assert.equal(expected.length, insns.length);
    const start = BigInt(`0x${insns[0]!.ip}`);
    expected.forEach((e, k) => {
      const ours = insns[k]!;
      assert.equal(BigInt(`0x${ours.ip}`) - start, BigInt(e.offset), `instruction ${k}: ${ours.asm}`);
      if (e.mnemonic) assert.equal(ours.asm.split(" ")[0], e.mnemonic, `instruction ${k}: ${ours.asm}`);
      if (e.imm) assert.equal(BigInt(`0x${/\$0x([0-9a-f]+)/.exec(ours.asm)?.[1]}`), BigInt(`0x${e.imm}`));
      if (e.dest && e.mnemonic !== "syscall") assert.ok(ours.asm.endsWith(`,${e.dest}`), ours.asm);
    });
  });
});

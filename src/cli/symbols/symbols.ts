/**
 * `ptkit symbols`: what ptkit knows about addresses of an ELF file. The function and
 * offset come from ptkit's own symbol table (demangled); the source file and line,
 * with inlined frames, from llvm-symbolizer or addr2line when one is installed.
 */

import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { LazyDemangler, SYMBOL_SECTIONS, SymbolHit, SymbolTable } from "../../analysis/index.js";
import { diagnosticLine } from "../../base/diagnostic.js";
import { hex64, splitBigInt } from "../../base/halves.js";
import { parseCUint } from "../../cpu/index.js";
import { tryParseElf } from "../../image/index.js";
import { loadDemangler } from "../../node/demangle-loader.js";
import {
  findSourceLineTool,
  SOURCE_LINE_HINT,
  SOURCE_LINE_TOOLS,
  type SourceFrame,
  SourceLines,
  type SourceLineTool,
  toolRuns,
} from "../../node/srcline.js";
import { readElf } from "../../session/elf-files.js";
import { ioErrorText } from "../../session/file-kind.js";
import { LineWriter, type SessionIo } from "../../session/io.js";

const HELP = `usage: ptkit symbols [<options>] <elf> [<address>...]

For each address (0x-prefixed hex or decimal), one line: the address, the function
that covers it and the offset into it (from the file's .symtab, .dynsym and PLT,
demangled), and the source file and line when llvm-symbolizer or addr2line is
installed and the file has debug information:

  0x0000000000001192 work+0x12 /src/p.c:3
      square inlined into work at /src/p.c:7

An inlined call adds a line per inlining level. Unknown parts print as ??.
Without addresses: every function symbol of the file, by address.

options:
  --bias <addr>      the file is loaded this much above its link-time addresses
                     (a PIE or shared object); addresses given are run-time ones.
  --addresses <file> also read addresses from a file (separated by white space).
  --no-demangle      names as the symbol table spells them.
  --no-lines         no source lines (no tool is run).
  --tool <name>      llvm-symbolizer or addr2line (default: the first installed).
  -h, --help         this text.

examples:
  ptkit symbols ./prog 0x401136 0x401150
  ptkit symbols --bias 0x555555554000 ./pie 0x555555555149
  ptkit symbols --no-lines /lib/x86_64-linux-gnu/libc.so.6
`;

const OPTIONS = {
  bias: { type: "string" },
  addresses: { type: "string" },
  "no-demangle": { type: "boolean" },
  "no-lines": { type: "boolean" },
  tool: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const U64 = 0xffff_ffff_ffff_ffffn;

interface SymbolsArgs {
  file: string;
  addrs: string[];
  addressFile: string | undefined;
  bias: bigint;
  demangle: boolean;
  lines: boolean;
  tool: SourceLineTool | undefined;
}

function parse(argv: readonly string[]): SymbolsArgs | "help" | string {
  let p: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    p = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true });
  } catch (e) {
    return (e as Error).message;
  }
  const v = p.values;
  if (v.help) return "help";
  if (p.positionals.length === 0) return "expected an ELF file.";
  let bias = 0n;
  if (v.bias !== undefined) {
    const b = parseCUint(v.bias);
    if (b === undefined || b > U64) return `--bias: bad address: ${v.bias}.`;
    bias = b;
  }
  const tool = v.tool as SourceLineTool | undefined;
  if (tool !== undefined && !SOURCE_LINE_TOOLS.includes(tool)) {
    return `--tool: want ${SOURCE_LINE_TOOLS.join(" or ")}, not ${tool}.`;
  }
  const [file, ...addrs] = p.positionals;
  return {
    file: file!,
    addrs,
    addressFile: v.addresses,
    bias,
    demangle: !v["no-demangle"],
    lines: !v["no-lines"],
    tool,
  };
}

/** Where the first frame is (`file:line`), and a line per inlining level. */
function frameLines(frames: readonly SourceFrame[]): { where: string; inlined: string[] } {
  if (frames.length === 0) return { where: "??:0", inlined: [] };
  const inlined: string[] = [];
  for (let k = 0; k + 1 < frames.length; k++) {
    const f = frames[k]!;
    const at = frames[k + 1]!;
    inlined.push(`    ${f.func} inlined into ${at.func} at ${at.file}:${at.line}`);
  }
  return { where: `${frames[0]!.file}:${frames[0]!.line}`, inlined };
}

/** File `path` (as an ELF file: the parts a symbol table reads); undefined when it cannot be read, said on stderr. */
function readOrSay(io: SessionIo, path: string, elf = false): Uint8Array | undefined {
  try {
    return elf ? readElf(io, path, SYMBOL_SECTIONS) : io.readFile(path);
  } catch (e) {
    io.stderr(`ptkit symbols: cannot read ${path}: ${ioErrorText(e)}\n`);
    return undefined;
  }
}

export function runSymbols(argv: readonly string[], io: SessionIo): number {
  const args = parse(argv);
  if (args === "help") {
    io.stdout(HELP);
    return 0;
  }
  if (typeof args === "string") {
    io.stderr(`ptkit symbols: ${args}\n\n${HELP}`);
    return 1;
  }
  const bytes = readOrSay(io, args.file, true);
  if (bytes === undefined) return 1;
  const texts: string[] = [...args.addrs];
  if (args.addressFile !== undefined) {
    const list = readOrSay(io, args.addressFile);
    if (list === undefined) return 1;
    texts.push(...new TextDecoder().decode(list).split(/\s+/).filter(Boolean));
  }
  const elf = tryParseElf(bytes);
  if (!("sections" in elf)) {
    const hint = "give the program or library (an ELF file) the addresses are in";
    io.stderr(`ptkit symbols: ${diagnosticLine(args.file, { ...elf.diagnostic, hint: elf.hint ?? hint })}\n`);
    return 1;
  }
  const addrs: bigint[] = [];
  for (const t of texts) {
    const a = parseCUint(t);
    if (a === undefined || a > U64) {
      io.stderr(`ptkit symbols: bad address: ${t}\n`);
      return 1;
    }
    addrs.push(a);
  }
  // Loaded at the first mangled name (C programs have none).
  const demangler = args.demangle
    ? new LazyDemangler(loadDemangler, (d) => io.stderr(`ptkit symbols: ${d}; names are shown mangled.\n`))
    : undefined;
  const table = new SymbolTable(elf, { name: args.file, bias: args.bias, demangler });
  for (const d of table.diagnostics) {
    io.stderr(`ptkit symbols: ${diagnosticLine(args.file, d)}\n`);
  }
  const out = new LineWriter(io.stdout);
  if (addrs.length === 0) {
    for (let k = 0; k < table.size; k++) {
      out.line(`0x${hex64(table.symbolStartHi(k), table.symbolStartLo(k))} ${table.symbolName(k)}`);
    }
    out.flush();
    return 0;
  }
  const frames = sourceFrames(args, io, addrs);
  const hit = new SymbolHit();
  const h = { hi: 0, lo: 0 };
  addrs.forEach((a, k) => {
    splitBigInt(a, h);
    let sym = "??";
    if (table.lookup(h.hi, h.lo, hit))
      sym = hit.offset === 0 ? hit.name : `${hit.name}+0x${hit.offset.toString(16)}`;
    const src = frames ? frameLines(frames[k]!) : undefined;
    out.line(`0x${hex64(h.hi, h.lo)} ${sym}${src ? ` ${src.where}` : ""}`);
    for (const line of src?.inlined ?? []) out.line(line);
  });
  out.flush();
  return 0;
}

/** Source frames per address, or undefined (with a note on stderr) when there are none to be had. */
function sourceFrames(
  args: SymbolsArgs,
  io: SessionIo,
  addrs: readonly bigint[],
): SourceFrame[][] | undefined {
  if (!args.lines) return undefined;
  const tool = args.tool ?? findSourceLineTool();
  if (tool === undefined || (args.tool !== undefined && !toolRuns(tool))) {
    io.stderr(
      `ptkit symbols: no source lines: ${tool === undefined ? "neither llvm-symbolizer nor addr2line found" : `${tool} does not run`} (${SOURCE_LINE_HINT}).\n`,
    );
    return undefined;
  }
  const lines = new SourceLines(tool);
  const linkTime = addrs.map((a) => (a - args.bias) & U64);
  const frames = lines.lookup(resolve(io.cwd, args.file), linkTime);
  if (typeof frames === "string") {
    io.stderr(`ptkit symbols: no source lines: ${frames}\n`);
    return undefined;
  }
  return frames;
}

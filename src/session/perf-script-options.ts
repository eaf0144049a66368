/**
 * perf script's command language for `ptkit perf`: -i/--input, --itrace, -F/--fields
 * (perf's field names, with its +field/-field and hw:/synth: forms), --call-trace,
 * --call-ret-trace, --ns and the filters (-C/--cpu lists, --pid, --tid, --comm,
 * --time), taken out of the argument list before ptkit's own options are parsed.
 * The meanings are perf 6.1's (tools/perf/Documentation/itrace.txt, perf-script.txt),
 * checked by running Debian's perf. No Node-only API: this moves to the library.
 */

/** What --itrace asks for (perf's letters). */
export interface Itrace {
  /**
   * i: instruction samples, one every `period` of `periodUnit`: instructions (i), TSC
   * ticks (t) or nanoseconds (ns, us and ms are given in ns). perf's default: 100us.
   */
  insn: boolean;
  period: number;
  periodUnit: "i" | "t" | "ns";
  /** Branch samples: `allBranches` (b) every branch, else calls (c: and trace ends) and returns (r: and trace begins). */
  branches: boolean;
  allBranches: boolean;
  calls: boolean;
  returns: boolean;
  /** e: decode errors. */
  errors: boolean;
  /** p: power events (psb and cbr lines); x: transactions; w: ptwrite. */
  power: boolean;
  transactions: boolean;
  ptwrite: boolean;
  /** s: samples skipped at the start. */
  skip: number;
  /** Letters accepted but not acted on, with why (printed as notes). */
  notes: string[];
}

/** perf script's output fields, in the order perf prints them. */
export const FIELDS = [
  "comm",
  "tid",
  "pid",
  "cpu",
  "time",
  "period",
  "event",
  "flags",
  "callindent",
  "ip",
  "sym",
  "symoff",
  "dso",
  "addr",
  "insnlen",
  "insn",
  "srcline",
  "synth",
] as const;
export type Field = (typeof FIELDS)[number];

/** perf's field names ptkit knows but does not print (accepted by -F with a note). */
const UNPRINTED = new Set([
  "trace",
  "srccode",
  "iregs",
  "uregs",
  "brstack",
  "brstacksym",
  "brstackoff",
  "brstackinsn",
  "brstackinsnlen",
  "bpf-output",
  "phys_addr",
  "metric",
  "misc",
  "ipc",
  "data_page_size",
  "code_page_size",
  "ins_lat",
  "weight",
  "cgroup",
  "retire_lat",
  "machine_pid",
  "vcpu",
  "tod",
  "dsoff",
  "bpf",
]);

/** perf script's default fields for Intel PT's samples (instructions, branches) and synthesized events (psb, cbr). */
const DEFAULT_HW: readonly Field[] = [
  "comm",
  "tid",
  "cpu",
  "time",
  "period",
  "event",
  "ip",
  "sym",
  "symoff",
  "dso",
];

export interface ScriptFields {
  /** Fields of instruction and branch samples, and of hardware events' samples (perf's "hw" events). */
  hw: Set<Field>;
  /** Fields of software events' samples (perf's "sw": cpu-clock, task-clock, page-faults, ...). */
  sw: Set<Field>;
  /**
   * The fields -F named for each kind: perf refuses those an event's samples lack
   * (the others it leaves out quietly).
   */
  named: { hw: Set<Field>; sw: Set<Field> };
  /** Fields of power events (perf's "synth" events). */
  synth: Set<Field>;
  /** Whether -F set the fields (else addr is shown for branches, as perf's default does). */
  user: boolean;
  /** -addr was given: perf's default addr of branch samples is off too. */
  noAddr: boolean;
}

export interface PerfScriptOptions {
  /** Whether any perf script option was given: ptkit perf then prints perf script's lines. */
  active: boolean;
  input: string | undefined;
  itrace: Itrace;
  fields: ScriptFields;
  ns: boolean;
  /** --call-trace: dsos padded to 50 columns. */
  padDso: number;
  cpus: number[] | undefined;
  pids: number[] | undefined;
  tids: number[] | undefined;
  comms: string[] | undefined;
  /** --time start,stop (perf time). */
  time: [string, string] | undefined;
  notes: string[];
}

/** perf's --itrace letters: the default for perf script (6.1) is calls, errors, power events, transactions, ptwrite. */
export function parseItrace(text: string | undefined): Itrace | string {
  const it: Itrace = {
    insn: false,
    period: 0,
    periodUnit: "i",
    branches: false,
    allBranches: false,
    calls: false,
    returns: false,
    errors: false,
    power: false,
    transactions: false,
    ptwrite: false,
    skip: 0,
    notes: [],
  };
  if (text === undefined || text === "") {
    // perf script without --itrace (or with a bare --itrace): itrace_synth_opts__set_default(no_sample).
    Object.assign(it, {
      branches: true,
      calls: true,
      errors: true,
      power: true,
      transactions: true,
      ptwrite: true,
    });
    return it;
  }
  const bad = (why: string) => `--itrace=${text}: ${why}`;
  let i = 0;
  const digits = (): string => {
    const m = /^\d+/.exec(text.slice(i));
    i += m ? m[0].length : 0;
    return m ? m[0] : "";
  };
  while (i < text.length) {
    const c = text[i++]!;
    switch (c) {
      case "i": {
        // perf's itrace_do_parse_synth_opts: a number, then its unit (i, t, ns, us, ms);
        // a number ending the text is in ns; no number: the default, 100us.
        it.insn = true;
        const n = digits();
        if (n === "") {
          it.period = 100_000;
          it.periodUnit = "ns";
          break;
        }
        const unit = /^(ms|us|ns|i|t)/.exec(text.slice(i))?.[0];
        if (unit === undefined && i < text.length)
          return bad(`the period ${n} wants a unit: i (instructions), t (ticks), ns, us or ms.`);
        i += unit?.length ?? 0;
        const scale = unit === "ms" ? 1_000_000 : unit === "us" ? 1000 : 1;
        it.period = Number(n) * scale;
        it.periodUnit = unit === "i" ? "i" : unit === "t" ? "t" : "ns";
        if (!Number.isSafeInteger(it.period)) return bad(`the period ${n}${unit ?? ""} is too large.`);
        // A period of 0 is every instruction.
        if (it.period === 0) {
          it.period = 1;
          it.periodUnit = "i";
        }
        break;
      }
      case "b":
        it.branches = true;
        it.allBranches = true;
        break;
      case "c":
        it.calls = true;
        break;
      case "r":
        it.returns = true;
        break;
      case "e":
        it.errors = true;
        flags();
        break;
      case "x":
        it.transactions = true;
        break;
      case "p":
        it.power = true;
        break;
      case "w":
        it.ptwrite = true;
        break;
      case "d":
        flags();
        it.notes.push("--itrace d (perf's debug log) is ignored");
        break;
      case "s":
        it.skip = Number(digits() || "0");
        break;
      case "g":
      case "l":
        digits();
        it.notes.push(
          `--itrace ${c} (${c === "g" ? "call chains" : "last branch entries"}) is ignored: not printed`,
        );
        break;
      case "o":
      case "I":
      case "q":
      case "Z":
        it.notes.push(`--itrace ${c} is ignored`);
        break;
      default:
        return bad(
          `unknown or unsupported letter '${c}' (ptkit knows i, b, c, r, e, x, p, w, d, s, g, l, o).`,
        );
    }
  }
  // perf keeps branches when any of b, c or r is given; b means all of them.
  if (it.calls || it.returns) it.branches = true;
  // With c or r, b adds nothing: perf keeps the calls and returns they ask for.
  if (it.calls || it.returns) it.allBranches = false;
  return it;

  // e and d take flags: +a-b...
  function flags(): void {
    while (i < text!.length && (text![i] === "+" || text![i] === "-")) {
      i++;
      while (i < text!.length && /[a-zA-Z]/.test(text![i]!)) i++;
    }
  }
}

/** perf's -F: a list of fields, or +field/-field changes to the defaults; `hw:`/`synth:` for one kind of event. */
export function parseFields(specs: readonly string[], start: ScriptFields): ScriptFields | string {
  const fields = {
    hw: new Set(start.hw),
    sw: new Set(start.sw),
    synth: new Set(start.synth),
    named: { hw: new Set(start.named.hw), sw: new Set(start.named.sw) },
    user: start.user,
    noAddr: start.noAddr,
  };
  for (const spec of specs) {
    let kinds: Array<"hw" | "sw" | "synth"> = ["hw", "sw", "synth"];
    let list = spec;
    const m = /^([a-z]+):(.*)$/.exec(spec);
    if (m) {
      if (m[1] === "hw") kinds = ["hw"];
      else if (m[1] === "sw") kinds = ["sw"];
      else if (m[1] === "synth") kinds = ["synth"];
      else if (m[1] === "trace" || m[1] === "raw" || m[1] === "brstackinsn") kinds = [];
      else return `-F ${spec}: unknown event type '${m[1]}' (hw, sw, trace, raw, synth).`;
      list = m[2]!;
    }
    let mode: "set" | "add" | "remove" = "set";
    const chosen: Field[] = [];
    const removed: Field[] = [];
    for (const raw of list.split(",")) {
      let name = raw.trim();
      if (name.startsWith("+")) {
        mode = "add";
        name = name.slice(1);
      } else if (name.startsWith("-")) {
        mode = "remove";
        name = name.slice(1);
      } else if (mode !== "set" && chosen.length + removed.length === 0) return `-F ${spec}: bad field list.`;
      if (name === "") continue;
      if (name === "sym_off") name = "symoff";
      if (!(FIELDS as readonly string[]).includes(name)) {
        if (UNPRINTED.has(name)) continue;
        return `-F: invalid field '${name}' (perf script's fields: ${FIELDS.join(",")}).`;
      }
      (mode === "remove" ? removed : chosen).push(name as Field);
    }
    const isChange = list.trim().startsWith("+") || list.trim().startsWith("-");
    for (const k of kinds) {
      const set = fields[k];
      if (!isChange) set.clear();
      for (const f of chosen) set.add(f);
      for (const f of removed) set.delete(f);
      if (k === "synth") continue;
      if (!isChange) fields.named[k].clear();
      for (const f of chosen) fields.named[k].add(f);
      for (const f of removed) fields.named[k].delete(f);
    }
    if (!isChange && chosen.length === 0) return `-F ${spec}: no fields given.`;
    // (What follows is of the Intel PT samples' fields: a list for other kinds leaves them.)
    if (!kinds.includes("hw")) continue;
    if (!isChange) fields.user = true;
    // perf shows a branch's addr by default after -F changes only when they add flags
    // alone (-F +flags: yes; +pid, -cpu, +flags,+pid: no), as perf script 6.1 does.
    if (removed.length > 0 || chosen.some((f) => f !== "flags")) fields.noAddr = true;
    if (chosen.includes("addr")) fields.noAddr = false;
  }
  return fields;
}

/**
 * Fields of a branch line that need no time: those the flow alone decides, and who
 * runs and where in the process's files and symbols (the walk moves the thread
 * switches and the process images on as the general decode does). Not the time, nor
 * what perf keeps across lines (callindent's stacks) or reads of the code (insn).
 */
const FLOW_FIELDS: ReadonlySet<Field> = new Set<Field>([
  "ip",
  "addr",
  "flags",
  "event",
  "period",
  "comm",
  "tid",
  "pid",
  "cpu",
  "sym",
  "symoff",
  "dso",
]);

/** Whether lines with these fields name symbols (they need the symbol tables; a file's name does not). */
export function namesSymbols(fields: ScriptFields): boolean {
  return fields.hw.has("sym") || fields.hw.has("symoff");
}

/**
 * Whether perf script's lines for these options are branch lines that need no time:
 * every branch or calls and returns (what ptkit perf's --branches and --calls print),
 * with fields the flow alone decides, and nothing else (no instruction, power,
 * transaction or ptwrite samples, no other events' samples, nothing skipped or
 * filtered by process or thread; errors, which show the time, only where the decode
 * has one, and there the fast path hands over). Then which it is; else undefined.
 */
export function untimedBranchLines(
  o: PerfScriptOptions,
  fields: ScriptFields,
  otherSamples: number,
): "branches" | "calls" | undefined {
  const it = o.itrace;
  if (
    !it.branches ||
    it.insn ||
    it.power ||
    it.transactions ||
    it.ptwrite ||
    it.skip !== 0 ||
    otherSamples !== 0 ||
    o.pids !== undefined ||
    o.tids !== undefined ||
    o.comms !== undefined ||
    o.time !== undefined ||
    [...fields.hw].some((f) => !FLOW_FIELDS.has(f))
  )
    return undefined;
  if (it.allBranches) return "branches";
  return it.calls && it.returns ? "calls" : undefined;
}

/** Default fields (perf script's for hardware and synthesized events). */
export function defaultFields(): ScriptFields {
  return {
    hw: new Set(DEFAULT_HW),
    sw: new Set(DEFAULT_HW),
    synth: new Set([...DEFAULT_HW, "synth"]),
    named: { hw: new Set(), sw: new Set() },
    user: false,
    noAddr: false,
  };
}

/** perf's CPU and thread lists: 0,2-3. */
export function parseList(option: string, text: string): number[] | string {
  const out: number[] = [];
  for (const part of text.split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) return `${option}: bad list: ${text} (want e.g. 0,2-3).`;
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from || to - from > 65536) return `${option}: bad range: ${part}.`;
    for (let n = from; n <= to; n++) out.push(n);
  }
  return out;
}

/** The options that take a value, by every name perf gives them. */
const VALUED: Record<string, string> = {
  "-i": "input",
  "--input": "input",
  "--itrace": "itrace",
  "-F": "fields",
  "--fields": "fields",
  "-C": "cpu",
  "--cpu": "cpu",
  "--pid": "pid",
  "--tid": "tid",
  "--comm": "comm",
  "--time": "time",
};

/**
 * Take perf script's options out of `argv` (the rest is ptkit's); a string: what is
 * wrong. A single --cpu or --tid stays ptkit's own (the same meaning); lists are perf's.
 */
export function takePerfScriptOptions(
  argv: readonly string[],
): { rest: string[]; options: PerfScriptOptions } | string {
  const rest: string[] = [];
  const values: Record<string, string[]> = {};
  let active = false;
  let callTrace: "" | "call" | "callret" = "";
  let ns = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === "--call-trace" || arg === "--call-ret-trace") {
      callTrace = arg === "--call-trace" ? "call" : "callret";
      active = true;
      continue;
    }
    if (arg === "--ns") {
      ns = true;
      continue;
    }
    if (arg === "--itrace") {
      push(values, "itrace", "");
      active = true;
      continue;
    }
    const eq = arg.indexOf("=");
    let name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    let value: string | undefined = arg.startsWith("--") && eq > 0 ? arg.slice(eq + 1) : undefined;
    // Short options with the value attached: -Fip,addr -iperf.data -C0.
    if (!(name in VALUED) && /^-[iFC]./.test(arg)) {
      name = arg.slice(0, 2);
      value = arg.slice(2);
    }
    const key = VALUED[name];
    if (key === undefined) {
      rest.push(arg);
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) return `option \`${name.replace(/^-+/, "")}' requires a value`;
      value = argv[++i]!;
    }
    // ptkit's --cpu N and --tid N (one number) keep their meaning; lists and ranges are perf's.
    if ((key === "cpu" && name === "--cpu") || key === "tid") {
      if (/^\d+$/.test(value)) {
        rest.push(name, value);
        continue;
      }
    }
    if (key !== "cpu" && key !== "tid" && key !== "pid" && key !== "comm" && key !== "time") active = true;
    push(values, key, value);
  }
  const itraceText = values.itrace?.at(-1);
  let itrace = parseItrace(callTrace === "call" ? "cewp" : callTrace === "callret" ? "crewp" : itraceText);
  if (typeof itrace === "string") return itrace;
  if (callTrace !== "" && itraceText !== undefined) {
    // perf applies them in order; the last --itrace wins over the trace options' letters.
    itrace = parseItrace(itraceText);
    if (typeof itrace === "string") return itrace;
  }
  let start = defaultFields();
  if (callTrace !== "") {
    const traceFields =
      callTrace === "call"
        ? "-ip,-addr,-event,-period,+callindent"
        : "-ip,-addr,-event,-period,+callindent,+flags";
    const f = parseFields([traceFields], start);
    if (typeof f === "string") return f;
    start = f;
  }
  const fields = parseFields(values.fields ?? [], start);
  if (typeof fields === "string") return fields;
  if (fields.hw.has("symoff") && !fields.hw.has("sym"))
    return "-F: symoff without sym (perf script refuses it too).";
  if (fields.hw.has("srcline") && !fields.hw.has("ip"))
    return "-F: srcline without ip: no address to look the source line up (perf script refuses it too).";
  const lists: Record<string, number[] | undefined> = {};
  for (const key of ["cpu", "pid", "tid"]) {
    const v = values[key];
    if (v === undefined) continue;
    const l = parseList(`--${key}`, v.join(","));
    if (typeof l === "string") return l;
    lists[key] = l;
  }
  let time: [string, string] | undefined;
  if (values.time) {
    const t = values.time.at(-1)!;
    const m = /^\s*([\d.]*)\s*,\s*([\d.]*)\s*$/.exec(t);
    if (!m) return `--time: want <start>,<stop> in perf time (seconds.nanoseconds): ${t}.`;
    // A perf time without a fraction is whole seconds.
    const sec = (s: string) => (s === "" || s.includes(".") ? s : `${s}.0`);
    time = [sec(m[1]!), sec(m[2]!)];
  }
  return {
    rest,
    options: {
      active,
      input: values.input?.at(-1),
      itrace,
      fields,
      ns: ns || callTrace !== "",
      padDso: callTrace === "call" ? 50 : 0,
      cpus: lists.cpu,
      pids: lists.pid,
      tids: lists.tid,
      comms: values.comm?.join(",").split(","),
      time,
      notes: itrace.notes,
    },
  };
}

function push(values: Record<string, string[]>, key: string, value: string): void {
  const list = values[key];
  if (list) list.push(value);
  else values[key] = [value];
}

/** perf's usage lines after an unknown option (perf exits 129). */
export const PERF_SCRIPT_USAGE = `
 Usage: ptkit perf [<options>] [<perf.data>]

    -i, --input <file>    input file name (default ./perf.data)
    -F, --fields <str>    comma separated output fields, prepend with 'type:'.
                          +field to add and -field to remove a field from the defaults.
        --itrace[=<opts>] Instruction Tracing options (i, b, c, r, e, x, p, w, d, s, g, l, o)
        --call-trace      Show call trace (--itrace=cewp -F-ip,-addr,-event,-period,+callindent)
        --call-ret-trace  Show call and return trace
        --ns              Use 9 decimal places when displaying time
    -C, --cpu <cpu>       list of cpus to profile
        --pid <pid[,pid...]>
        --tid <tid[,tid...]>
        --comm <comm[,comm...]>
        --time <str>      Time span of interest (start,stop)
    -h, --help            ptkit perf's help

`;

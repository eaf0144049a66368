/**
 * The web app's page: choose or drop a perf.data file and the binaries it ran (or a
 * raw trace, the ELF files it ran and, in a small form, the decoder settings a
 * perf.data would have recorded), and see where time went. Decoding runs in a worker (worker.ts) with a progress bar, so the
 * page never freezes; the answers are shown as a summary, the hottest functions, a
 * timeline and flame graph (speedscope, served beside the page, opens the timeline),
 * coverage by function and block, and downloads of every output. Elements that tests
 * and scripts read carry `data-ptkit` names.
 */

import { ANSWER_FILES, SHOWN_ROWS } from "../src/session/answer-files.js";
import { fileKind, HEAD_BYTES } from "../src/session/file-kind.js";
import type {
  AnnotatedFunction,
  CoverageRow,
  FunctionRow,
  PerfAnswers,
  RawCodeFile,
  RawDecoderSettings,
} from "../src/session/index.js";
import type { DecodeRequest, WorkerMessage } from "./protocol.js";

const $ = <T extends HTMLElement>(name: string): T => {
  const el = document.querySelector<T>(`[data-ptkit="${name}"]`);
  if (el === null) throw new Error(`the page has no ${name} element`);
  return el;
};

/** The files chosen so far, by name (a file chosen again replaces the one before). */
const chosen = new Map<string, File>();
let worker: Worker | undefined;
/** Object URLs of the last results, revoked when new ones come. */
let urls: string[] = [];
/** Timelines shown so far. */
let timelines = 0;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  attrs: Record<string, string> = {},
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function setStatus(text: string, error = false): void {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", error);
}

function showFiles(): void {
  $("raw").hidden = true;
  const list = $("files");
  list.replaceChildren(...[...chosen.values()].map((f) => el("li", `${f.name} (${size(f.size)})`)));
  ($("decode") as HTMLButtonElement).disabled = chosen.size === 0;
}

function choose(files: Iterable<File>): void {
  for (const f of files) chosen.set(f.name, f);
  showFiles();
}

const size = (n: number): string =>
  n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;

/** What the first bytes of `file` say it is (session/file-kind.ts): "perf", "elf", "trace", ... */
async function kindOf(file: File): Promise<string | undefined> {
  return fileKind(new Uint8Array(await file.slice(0, HEAD_BYTES).arrayBuffer()));
}

async function decode(): Promise<void> {
  const files = [...chosen.values()];
  const kinds = await Promise.all(files.map(kindOf));
  const perfData = files.find((_, i) => kinds[i] === "perf");
  $("raw").hidden = true;
  if (perfData !== undefined) {
    run({ kind: "perf", files, perfData: perfData.name }, perfData.name);
    return;
  }
  const traces = files.filter((_, i) => kinds[i] === "trace");
  if (traces.length === 0) {
    setStatus(
      `None of the files is a perf.data file (perf record -e intel_pt//) or a raw Intel PT trace: ${files.map((f) => f.name).join(", ")}.`,
      true,
    );
    return;
  }
  rawForm(files, kinds, traces[0]!);
}

/**
 * The form for a raw trace: which file is the trace, the decoder settings a raw trace
 * does not hold (ptxed's options of the same names), and where each other file's code
 * was loaded (an ELF file: its own addresses unless given; raw bytes: needed).
 */
function rawForm(files: File[], kinds: Array<string | undefined>, trace: File): void {
  setStatus(
    `${trace.name} is a raw Intel PT trace: give the decoder the settings of the machine that traced it (perf.data records them; a raw trace does not), then decode.`,
  );
  const select = $("raw-trace") as HTMLSelectElement;
  select.replaceChildren(
    ...files
      .filter((_, i) => kinds[i] !== "elf")
      .map((f) => el("option", f.name, f === trace ? { value: f.name, selected: "" } : { value: f.name })),
  );
  const codeRows = () => {
    const rows = files
      .filter((f) => f.name !== select.value)
      .map((f) => {
        const elf = kinds[files.indexOf(f)] === "elf";
        const input = el("input", undefined, {
          "data-ptkit": "raw-base",
          "data-file": f.name,
          placeholder: elf ? "its own addresses" : "needed: e.g. 0x400000",
          size: "22",
        });
        const tr = el("tr");
        const cell = el("td");
        cell.append(input);
        tr.append(el("td", f.name), el("td", elf ? "ELF file" : "raw bytes"), cell);
        return tr;
      });
    $("raw-code").replaceChildren(...rows);
  };
  select.onchange = codeRows;
  codeRows();
  $("raw").hidden = false;
}

/** The form's request: the trace, the code with its load addresses, the settings. */
function rawRequest(): Extract<DecodeRequest, { kind: "raw" }> {
  const files = [...chosen.values()];
  const trace = ($("raw-trace") as HTMLSelectElement).value;
  const code: RawCodeFile[] = [...document.querySelectorAll<HTMLInputElement>('[data-ptkit="raw-base"]')].map(
    (input) => ({ name: input.dataset.file!, base: input.value.trim() }),
  );
  const value = (name: string) => ($(name) as HTMLInputElement).value.trim();
  const number = (name: string) => (value(name) === "" ? undefined : Number(value(name)));
  const settings: RawDecoderSettings = {
    cpu: value("raw-cpu"),
    mtcFreq: number("raw-mtc"),
    nomFreq: number("raw-nom"),
    cpuid15Eax: number("raw-cpuid-eax"),
    cpuid15Ebx: number("raw-cpuid-ebx"),
  };
  return { kind: "raw", files, trace, code, settings };
}

/** Decode in a fresh worker, showing progress, then the answers. */
function run(request: DecodeRequest, name: string): void {
  worker?.terminate();
  worker = new Worker(new URL("worker.js", import.meta.url), { type: "module" });
  const progress = $("progress") as HTMLProgressElement;
  progress.hidden = false;
  progress.value = 0;
  const buttons = [$("decode"), $("raw-decode")] as HTMLButtonElement[];
  for (const b of buttons) b.disabled = true;
  setStatus(`Decoding ${name}…`);
  worker.onmessage = (e: MessageEvent<WorkerMessage>) => {
    const m = e.data;
    if (m.kind === "progress") {
      progress.value = m.total > 0 ? m.done / m.total : 0;
      if (m.done >= m.total) setStatus(`Decoded the trace of ${name}; writing the outputs and tables…`);
      return;
    }
    progress.hidden = true;
    for (const b of buttons) b.disabled = false;
    if (m.kind === "failed") setStatus(`Decoding failed: ${m.message}`, true);
    else show(m.answers, name, m.ms, m.timelineMinDuration);
  };
  worker.onerror = (e) => {
    progress.hidden = true;
    for (const b of buttons) b.disabled = false;
    setStatus(`Decoding failed: ${e.message}`, true);
  };
  worker.postMessage(request);
}

function show(a: PerfAnswers, name: string, ms: number, minDuration: number): void {
  for (const u of urls) URL.revokeObjectURL(u);
  urls = [];
  $("results").hidden = false;
  setStatus(a.error ?? `Decoded ${name} in ${(ms / 1000).toFixed(2)} s.`, a.error !== undefined);
  $("summary").textContent = a.summary.replace(/^wrote [^:]*: /, "");
  showMissing(a);
  $("warnings").replaceChildren(...a.warnings.map((w) => el("li", w)));
  $("functions").replaceChildren(functionTable(a.functions));
  $("coverage").replaceChildren(coverageTable(a.coverage, a.annotated));
  showDownloads(a);
  showTimeline(a, name, minDuration);
}

function showMissing(a: PerfAnswers): void {
  const box = $("missing");
  box.hidden = a.missing.length === 0;
  const items = a.missing.map((m) => {
    const base = m.path.slice(m.path.lastIndexOf("/") + 1);
    const li = el("li");
    li.append(
      "Add ",
      el("code", base),
      ` (recorded as ${m.path}): ${m.addresses} address${m.addresses === 1 ? "" : "es"} needed it.`,
    );
    return li;
  });
  box.replaceChildren(
    el("p", "Some code could not be decoded: choose these binaries too, then decode again."),
    el("ul"),
  );
  box.querySelector("ul")!.append(...items);
}

function table(head: string[], rows: Array<Array<string | number>>, numeric: boolean[]): HTMLTableElement {
  const t = el("table");
  const tr = el("tr");
  tr.append(...head.map((h) => el("th", h)));
  t.append(el("thead"), el("tbody"));
  t.tHead!.append(tr);
  for (const r of rows) {
    const row = el("tr");
    row.append(
      ...r.map((v, i) =>
        el("td", typeof v === "number" ? v.toLocaleString("en-US") : v, numeric[i] ? { class: "num" } : {}),
      ),
    );
    t.tBodies[0]!.append(row);
  }
  return t;
}

function functionTable(rows: FunctionRow[]): HTMLElement {
  const all = rows.reduce((n, r) => n + r.self, 0) || 1;
  const shown = rows.slice(0, SHOWN_ROWS);
  const t = table(
    ["function", "self insns", "self %", "total insns", "calls", "time in calls (µs)"],
    shown.map((r) => [
      r.name,
      r.self,
      ((100 * r.self) / all).toFixed(1),
      r.total,
      r.calls,
      (r.ns / 1000).toFixed(3),
    ]),
    [false, true, true, true, true, true],
  );
  return rows.length > SHOWN_ROWS
    ? wrap(t, `The ${SHOWN_ROWS} of ${rows.length} functions that ran the most instructions.`)
    : t;
}

function wrap(t: HTMLElement, note: string): HTMLElement {
  const d = el("div");
  d.append(el("p", note), t);
  return d;
}

function coverageTable(rows: CoverageRow[], annotated: AnnotatedFunction[]): HTMLElement {
  const blocks = rows.reduce((n, r) => n + r.blocks, 0);
  const d = el("div");
  d.append(
    el(
      "p",
      `${rows.length} functions and ${blocks} basic blocks ran. Choose a function for its blocks and annotated disassembly.`,
    ),
  );
  const t = table(
    ["function", "blocks", "block entries", "insns run"],
    rows.slice(0, SHOWN_ROWS).map((r) => [r.name, r.blocks, r.entries, r.insns]),
    [false, true, true, true],
  );
  // A function's blocks and code go below the tables (the coverage box scrolls).
  const detail = $("blocks");
  detail.replaceChildren();
  detail.parentElement!.hidden = true;
  t.tBodies[0]!.addEventListener("click", (e) => {
    const tr = (e.target as HTMLElement).closest("tr");
    const name = tr?.cells[0]?.textContent;
    if (!name) return;
    const own = rows.find((r) => r.name === name)?.list ?? [];
    const code = annotated.find((f) => f.name === name);
    const listing = code
      ? table(
          ["runs", "address", "instruction"],
          code.lines.map((l) => [l.count, l.ip, l.text]),
          [true, false, false],
        )
      : el("p", "Not annotated: only the functions that ran the most instructions are.");
    const annotation = el("div", undefined, { "data-ptkit": "annotate" });
    annotation.append(listing);
    detail.parentElement!.hidden = false;
    const blockBox = el("div", undefined, { class: "table-box" });
    blockBox.append(
      table(
        ["block", "end", "insns", "entries", "symbol"],
        own.map((b) => [b.start, b.end, b.insns, b.count, b.symbol ?? ""]),
        [false, false, true, true, false],
      ),
    );
    annotation.classList.add("table-box");
    const grid = el("div", undefined, { class: "grid" });
    const left = el("div");
    left.append(el("h3", "Blocks"), blockBox);
    const right = el("div");
    right.append(el("h3", "Annotated disassembly: runs of each instruction"), annotation);
    grid.append(left, right);
    detail.replaceChildren(el("h3", name), grid);
  });
  d.append(t);
  return d;
}

function showDownloads(a: PerfAnswers): void {
  const items = (Object.keys(ANSWER_FILES) as Array<keyof typeof ANSWER_FILES>).flatMap((key) => {
    const chunks = a.files[key];
    if (chunks === undefined) return [];
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    // The file's Blob (a copy) is made when the link is first clicked, not for every result shown.
    const link = el("a", ANSWER_FILES[key], { href: "#", download: ANSWER_FILES[key] });
    link.addEventListener("click", () => {
      if (link.getAttribute("href") !== "#") return;
      const url = URL.createObjectURL(new Blob([...chunks] as BlobPart[]));
      urls.push(url);
      link.href = url;
    });
    const li = el("li");
    li.append(link, ` (${size(bytes)})`);
    return [li];
  });
  $("downloads").replaceChildren(...items);
}

/** Timelines larger than this open in speedscope only when asked: its import holds the page while it runs. */
const AUTO_TIMELINE_BYTES = 8 << 20;

function showTimeline(a: PerfAnswers, name: string, minDuration: number): void {
  const frame = $("timeline") as HTMLIFrameElement;
  const note = $("timeline-note");
  const json = a.files.timeline;
  const jsonBytes = json?.reduce((n, c) => n + c.length, 0) ?? 0;
  frame.hidden = true;
  note.replaceChildren();
  if (json === undefined) return;
  if (minDuration > 0)
    note.append(
      `The file is large: calls shorter than ${minDuration / 1000} µs are left out of the timeline (the tables, folded stacks, coverage and latencies count every call). `,
    );
  const open = () => {
    const url = URL.createObjectURL(new Blob([...json] as BlobPart[], { type: "application/json" }));
    urls.push(url);
    const hash = `profileURL=${encodeURIComponent(url)}&title=${encodeURIComponent(name)}`;
    // A new query each time: a src that differs only after the '#' would not reload speedscope.
    frame.src = `speedscope/index.html?${++timelines}#${hash}`;
    frame.hidden = false;
  };
  if (jsonBytes <= AUTO_TIMELINE_BYTES) {
    open();
    return;
  }
  const button = el("button", `Open the timeline (${size(jsonBytes)}) in speedscope`, { type: "button" });
  button.addEventListener("click", () => {
    button.remove();
    open();
  });
  note.append("A timeline this size takes speedscope a while to load. ", button);
}

/** Files `ptkit web FILE...` serves with the page: loaded and decoded at once. */
async function preload(): Promise<void> {
  let names: string[];
  try {
    const res = await fetch("files.json");
    if (!res.ok) return;
    names = (await res.json()) as string[];
  } catch {
    return;
  }
  const files = await Promise.all(
    names.map(async (n) => new File([await (await fetch(`files/${encodeURIComponent(n)}`)).blob()], n)),
  );
  choose(files);
  if (files.length > 0) await decode();
}

function start(): void {
  const input = $("input") as HTMLInputElement;
  input.addEventListener("change", () => {
    if (input.files) choose(input.files);
  });
  $("decode").addEventListener("click", () => void decode());
  $("raw-decode").addEventListener("click", () => {
    const request = rawRequest();
    run(request, request.trace);
  });
  $("clear").addEventListener("click", () => {
    chosen.clear();
    showFiles();
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer) choose(e.dataTransfer.files);
  });
  showFiles();
  void preload();
}

start();

/** `ptkit perf-dump`: what a perf.data file holds, record by record, and its Intel PT streams. */

import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { diagnosticLine } from "../../base/diagnostic.js";
import { parseCInt } from "../../cpu/index.js";
import { fileSource } from "../../node/source.js";
import {
  auxStreams,
  auxtraceBuffers,
  diagnosticText,
  forEachAuxChunk,
  PerfDataReader,
  PerfError,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
  recordConversion,
  recordTypeName,
  SampleId,
  tscConversionProblem,
} from "../../perf/index.js";
import { ioErrorText, openError } from "../../session/file-kind.js";
import { LineWriter, type SessionIo } from "../../session/io.js";
import { auxtraceInfoLines, headerLines, recordLine } from "./dump-text.js";

const HELP = `usage: ptkit perf-dump [<options>] <perf.data>

List what a perf.data file (perf record -e intel_pt//, file or pipe mode) holds:
the header, feature sections (host, cpu, cpuid, build ids, auxtrace index, ...),
every event's attributes and ids (in pipe mode after the records that carry
them), then one line per record like perf report -D:
file offset, [size], type, its fields and {its sample id}. Records inside
COMPRESSED records show as offset+offset-in-decompressed-data. AUXTRACE_INFO is
shown in full with the ptkit dump/flow options it implies. Problems are printed
as [offset: what] where they occur; reading goes on where it can. <perf.data>
may be - for standard input (a pipe: held in memory whole).

options:
  --aux DIR       write each Intel PT stream (one per CPU, or per thread) to
                  DIR/aux-idxN.bin, snapshot overlaps removed, for ptkit dump/flow.
  --no-records    the header, features, events and streams only.
  --pevent TYPE   read the file as libipt pevent sideband (perf records without
                  a header, as DynamoRIO and libipt's tests keep them) whose
                  sample_id fields follow the PERF_SAMPLE_* mask TYPE.
  -h, --help      this text.

examples:
  ptkit perf-dump perf.data
  ptkit perf-dump --aux pt perf.data && ptkit dump --cpu 6/94/3 pt/aux-idx2.bin
  perf record -o - -e intel_pt//u ls | cat > piped.data; ptkit perf-dump piped.data
  perf record -o - -e intel_pt//u ls | ptkit perf-dump -
  ptkit perf-dump --pevent 0x10086 primary.sideband.pevent
`;

export function runPerfDump(argv: readonly string[], io: SessionIo): number {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (e) {
    io.stderr(`ptkit perf-dump: ${(e as Error).message}\nUse --help or -h for help.\n`);
    return 1;
  }
  if (args.values.help) {
    io.stdout(HELP);
    return 0;
  }
  const file = args.positionals[0];
  if (file === undefined || args.positionals.length > 1) {
    io.stderr("ptkit perf-dump: expected exactly one perf.data file.\nUse --help or -h for help.\n");
    return 1;
  }
  const pevent = args.values.pevent === undefined ? undefined : parseCInt(args.values.pevent);
  if (args.values.pevent !== undefined && (pevent === undefined || pevent > 0xffffffff)) {
    io.stderr(`ptkit perf-dump: --pevent: bad sample type: ${args.values.pevent}.\n`);
    return 1;
  }
  const unreadable = file === "-" ? undefined : openError(io, file);
  if (unreadable !== undefined) {
    io.stderr(`ptkit perf-dump: ${unreadable}\n`);
    return 1;
  }
  if (args.values.aux !== undefined) {
    try {
      mkdirSync(resolve(io.cwd, args.values.aux), { recursive: true });
    } catch (e) {
      io.stderr(`ptkit perf-dump: --aux ${args.values.aux}: cannot make the directory: ${ioErrorText(e)}.\n`);
      return 1;
    }
  }
  const out = new LineWriter(io.stdout);
  try {
    dump(io, out, file, { auxDir: args.values.aux, noRecords: args.values["no-records"] === true, pevent });
  } catch (e) {
    out.flush();
    if (!(e instanceof PerfError) && !(e as NodeJS.ErrnoException).code) throw e;
    // A system error names its own path (an --aux file), a PerfError is about the perf.data file.
    const path = e instanceof PerfError ? file : ((e as NodeJS.ErrnoException).path ?? file);
    io.stderr(
      `ptkit perf-dump: ${e instanceof PerfError ? diagnosticLine(path, e) : `${path}: ${ioErrorText(e)}`}\n`,
    );
    return 1;
  }
  out.flush();
  return 0;
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      aux: { type: "string" },
      "no-records": { type: "boolean" },
      pevent: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

interface DumpOptions {
  auxDir: string | undefined;
  noRecords: boolean;
  pevent: number | undefined;
}

function dump(
  io: SessionIo,
  out: LineWriter,
  file: string,
  { auxDir, noRecords, pevent }: DumpOptions,
): void {
  const source = fileSource(io, file);
  let quiet = true; // header diagnostics are printed after the header lines
  const reader = new PerfDataReader(source, {
    onDiagnostic: (d) => quiet || out.line(diagnosticText(d)),
    ...(pevent === undefined ? {} : { peventSampleType: pevent }),
  });
  // A pipe's features and events come as records: its header block follows them.
  const pipe = reader.header.pipe;
  const header = headerLines(reader, source.size);
  for (const line of pipe ? header.slice(0, 1) : header) out.line(line);
  for (const d of reader.diagnostics) out.line(diagnosticText(d));
  quiet = noRecords;
  const rec = new PerfRecord();
  const sid = new SampleId();
  const counts = new Map<number, number>();
  let snapshot = false;
  while (reader.next(rec)) {
    counts.set(rec.type, (counts.get(rec.type) ?? 0) + 1);
    if (!noRecords) out.line(recordLine(reader, rec, sid));
    // A TSC conversion ptkit perf will not use (a corrupt time_shift or time_mult).
    const conversion = recordConversion(rec);
    const badConversion = conversion && tscConversionProblem(conversion);
    if (badConversion && !noRecords) out.line(diagnosticText({ offset: rec.offset, message: badConversion }));
    if (rec.type === RecordType.AuxtraceInfo) {
      const info = parseAuxtraceInfo(rec.bytes);
      snapshot ||= info?.intelPt?.snapshotMode === 1n;
      if (info && !noRecords) for (const line of auxtraceInfoLines(info, reader)) out.line(line);
    }
  }
  if (pipe) for (const line of headerLines(reader, source.size).slice(1)) out.line(line);
  const summary = [...counts].map(([t, n]) => `${recordTypeName(t)}=${n}`).join(" ");
  out.line(`# records: ${summary || "none"}`);
  if (reader.diagnosticCount > 0) out.line(`# problems: ${reader.diagnosticCount}`);
  quiet = true;
  const streams = auxStreams(source, auxtraceBuffers(reader), snapshot, (offset, message) =>
    out.line(diagnosticText({ offset, message })),
  );
  const dir = auxDir === undefined ? undefined : resolve(io.cwd, auxDir); // made by runPerfDump
  for (const s of streams) {
    const name = `aux-idx${s.idx}.bin`;
    let where = "";
    if (dir !== undefined) {
      const fd = openSync(join(dir, name), "w");
      try {
        forEachAuxChunk(source, s, (bytes) => writeSync(fd, bytes));
      } finally {
        closeSync(fd);
      }
      where = ` -> ${join(auxDir!, name)}`;
    }
    out.line(
      `# aux idx ${s.idx} cpu ${s.cpus.join(",")} tid ${s.tids.join(",")}: ${s.size} bytes in ${s.buffers.length} buffers${where}`,
    );
  }
}

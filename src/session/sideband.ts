/**
 * The sideband session of `ptkit dump` and `ptkit flow`: the --pevent channels loaded
 * from their files, records printed to stdout as the tool prints them, and diagnostics
 * as libipt's tools print them (`[file:offset sideband error: ...]`; ptxed also says
 * "warning" for warnings).
 */
import type { Image } from "../image/index.js";
import { errorMessage } from "../packet/index.js";
import { type PeventConfig, SidebandSession, sidebandWarningText } from "../perf/index.js";
import { ioErrorText } from "./file-kind.js";
import { parseFileRange } from "./file-range.js";
import type { LineWriter, SessionIo } from "./io.js";
import type { SidebandOptions, SidebandTool } from "./sideband-config.js";

/**
 * Make the session (its process images starting from `kernel`, if given) and load its
 * channels; returns it, or an error message naming the file.
 */
export function openSideband(
  io: SessionIo,
  out: LineWriter,
  o: SidebandOptions,
  tool: SidebandTool,
  kernel?: Image,
): SidebandSession | string {
  const session = new SidebandSession(
    {
      print: (text) => out.line(text),
      error: (code, filename, offset) => {
        if (code >= 0 && !o.warn) return;
        const severity = tool === "flow" && code >= 0 ? "warning" : "error";
        const text = code < 0 ? errorMessage(code) : sidebandWarningText(code);
        out.line(`[${filename}:${offset.toString(16).padStart(16, "0")} sideband ${severity}: ${text}]`);
      },
      readFile: (path) => {
        try {
          return io.readFile(path);
        } catch {
          return undefined;
        }
      },
      ...(o.showSwitch ? { switched: (name: string) => out.line(`[context: ${name}]`) } : {}),
    },
    kernel,
  );
  for (const ch of o.channels) {
    const range = parseFileRange(ch.arg);
    if (typeof range === "string") return `bad file ${ch.arg}: ${range}.`;
    let size: number;
    try {
      size = io.fileSize(range.path);
    } catch (e) {
      return `error loading ${range.path}: ${ioErrorText(e)}.`;
    }
    if (range.from > size)
      return `error loading ${range.path}: offset 0x${range.from.toString(16)} is past its end.`;
    // Like libipt, a range past the end of the file is cut to the file.
    const end = Math.min(range.to ?? size, size);
    const bytes = io.readRange(range.path, range.from, end - range.from);
    const p = ch.params;
    const config: PeventConfig = {
      filename: range.path,
      bytes,
      primary: ch.primary,
      sampleType: p.sampleType,
      ...(p.sampleConfig.length > 0 ? { sampleConfig: new Map([...p.sampleConfig].reverse()) } : {}),
      conversion: { timeShift: p.timeShift, timeMult: p.timeMult, timeZero: p.timeZero },
      tscOffset: p.tscOffset,
      kernelStart: p.kernelStart,
      sysroot: p.sysroot,
      vdsoX64: p.vdsoX64,
      vdsoX32: p.vdsoX32,
      vdsoIa32: p.vdsoIa32,
    };
    session.addPevent(config);
  }
  session.init();
  return session;
}

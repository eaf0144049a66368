/** The bundled sample's timeline as `ptkit flow --timeline` writes it, for the timeline tests. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main } from "../../src/cli/ptkit.js";
import { captureIo } from "../conformance/ptt.js";
import { REPO_ROOT } from "../corpus.js";

export const SAMPLE_DIR = join(REPO_ROOT, "sample");

/** The `skip` option for tests that need the bundled sample. */
export const SAMPLE_SKIP = existsSync(join(SAMPLE_DIR, "sample.json"))
  ? false
  : `no bundled sample in ${SAMPLE_DIR}`;

/** The sample's timeline JSON, decoded with the sample's own settings (sample.json). */
export async function sampleTimeline(): Promise<string> {
  const about = JSON.parse(readFileSync(join(SAMPLE_DIR, "sample.json"), "utf8"));
  const d = about.decode;
  const dir = mkdtempSync(join(tmpdir(), "ptkit-timeline-"));
  try {
    const io = captureIo(dir);
    const status = await main(
      [
        "flow",
        // As in ptxed, the decoder settings come before the --pt that they configure.
        ...["--mtc-freq", `${d.mtcFreq}`, "--nom-freq", `${d.nomFreq}`],
        ...["--cpuid-0x15.eax", `${d.cpuid15Eax}`, "--cpuid-0x15.ebx", `${d.cpuid15Ebx}`],
        ...["--elf", join(SAMPLE_DIR, about.program), "--pt", join(SAMPLE_DIR, about.trace)],
        ...["--quiet", "--timeline", "timeline.json"],
      ],
      io,
    );
    assert.equal(status, 0, io.err.join(""));
    return readFileSync(join(dir, "timeline.json"), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

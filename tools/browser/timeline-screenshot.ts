/**
 * A PNG of a ptkit timeline (Chrome trace-event JSON) in speedscope's Time Order view,
 * taken in headless Chromium: the README's picture.
 *
 *   node dist/tools/browser/timeline-screenshot.js timeline.json docs/timeline.png [title]
 *
 * speedscope's warnings about frames that do not nest are printed: they mean the
 * picture does not show what the timeline says.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { CHROMIUM_SKIP, launchChromium, servedFile, serveFiles } from "./chromium.js";
import { openInSpeedscope, speedscopeFiles } from "./speedscope.js";

const [input, output, title] = process.argv.slice(2);
if (!input || !output) {
  process.stderr.write("usage: timeline-screenshot <timeline.json> <out.png> [title]\n");
  process.exit(2);
}
if (CHROMIUM_SKIP) {
  process.stderr.write(`${CHROMIUM_SKIP}\n`);
  process.exit(1);
}

const files = speedscopeFiles();
files.set("/timeline.json", servedFile("timeline.json", readFileSync(input)));
const server = await serveFiles(files);
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  page.on("console", (m) => {
    if (/Tried to end|still open/.test(m.text())) process.stderr.write(`speedscope: ${m.text()}\n`);
  });
  await openInSpeedscope(page, server.url, `${server.url}timeline.json`, title ?? basename(input));
  // Let speedscope draw its canvases (two animation frames).
  await page.evaluate(
    () =>
      new Promise((resolve) => {
        const raf = (globalThis as unknown as { requestAnimationFrame(f: () => void): void })
          .requestAnimationFrame;
        raf(() => raf(() => resolve(undefined)));
      }),
  );
  await page.screenshot({ path: output });
  process.stdout.write(`${output}\n`);
} finally {
  await browser.close();
  await server.close();
}

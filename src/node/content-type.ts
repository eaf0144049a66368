/** The content types the web app's files are served with (`ptkit web`, the browser tests' server). */
const TYPES: Record<string, string> = {
  css: "text/css",
  html: "text/html; charset=utf-8",
  ico: "image/x-icon",
  js: "text/javascript",
  json: "application/json",
  png: "image/png",
  txt: "text/plain",
  wasm: "application/wasm",
  woff2: "font/woff2",
};

/** The content type of a file by its name's extension (binary when unknown). */
export function contentType(name: string): string {
  const dot = name.lastIndexOf(".");
  return (dot >= 0 && TYPES[name.slice(dot + 1).toLowerCase()]) || "application/octet-stream";
}

/**
 * Just enough YAML for the manifests in deploy/ (the project has no YAML library, and
 * needs none): one document of block mappings and block sequences, with plain, double-
 * or single-quoted scalars and flow sequences of double-quoted strings (`["a", "b"]`).
 * Anything else (anchors, flow mappings, multi-line scalars, several documents, tabs)
 * throws, so a manifest the tests cannot read fails them instead of passing unread.
 */

export type Yaml = string | number | boolean | null | Yaml[] | { [key: string]: Yaml };

interface Line {
  indent: number;
  text: string;
  /** 1-based, for messages. */
  no: number;
}

/** The line without its comment (a `#` outside quotes, at the start or after a blank). */
function withoutComment(line: string): string {
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === '"' && c === "\\") i++;
    else if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#" && (i === 0 || line[i - 1] === " ")) return line.slice(0, i);
  }
  return line;
}

function lines(source: string): Line[] {
  const out: Line[] = [];
  source.split("\n").forEach((raw, i) => {
    const no = i + 1;
    const text = withoutComment(raw).trimEnd();
    if (text.trim() === "") return;
    if (/^\s*\t/.test(text)) throw new Error(`line ${no}: tab indentation`);
    if (text === "---" || text === "...") throw new Error(`line ${no}: more than one document`);
    const indent = text.length - text.trimStart().length;
    out.push({ indent, text: text.trimStart(), no });
  });
  return out;
}

function scalar(text: string, no: number): Yaml {
  if (text.startsWith('"') || text.startsWith("[")) {
    try {
      return JSON.parse(text) as Yaml;
    } catch {
      throw new Error(`line ${no}: unsupported value ${text}`);
    }
  }
  if (text.startsWith("'")) {
    if (!/^'(?:[^']|'')*'$/.test(text)) throw new Error(`line ${no}: bad quoted value ${text}`);
    return text.slice(1, -1).replaceAll("''", "'");
  }
  if (/^[{&*!|>%@`]/.test(text) || text.includes(": ")) throw new Error(`line ${no}: unsupported ${text}`);
  if (/^-?\d+$/.test(text)) return Number(text);
  if (text === "true" || text === "false") return text === "true";
  if (text === "null" || text === "~") return null;
  return text;
}

const isItem = (l: Line): boolean => l.text === "-" || l.text.startsWith("- ");
const KEY = /^([A-Za-z0-9_./-]+):(?: +(.*))?$/;

class Parser {
  i = 0;
  constructor(readonly ls: Line[]) {}

  block(indent: number): Yaml {
    return isItem(this.ls[this.i]!) ? this.sequence(indent) : this.mapping(indent);
  }

  mapping(indent: number): Yaml {
    const map: { [key: string]: Yaml } = {};
    while (this.i < this.ls.length) {
      const l = this.ls[this.i]!;
      if (l.indent < indent || (l.indent === indent && isItem(l))) break;
      if (l.indent > indent) throw new Error(`line ${l.no}: unexpected indentation`);
      const m = KEY.exec(l.text);
      if (!m) throw new Error(`line ${l.no}: expected "key: value", got ${l.text}`);
      const key = m[1]!;
      if (key in map) throw new Error(`line ${l.no}: duplicate key ${key}`);
      this.i++;
      if (m[2] !== undefined) map[key] = scalar(m[2], l.no);
      else {
        const next = this.ls[this.i];
        const nested = next && (next.indent > indent || (next.indent === indent && isItem(next)));
        map[key] = nested ? this.block(next.indent) : null;
      }
    }
    return map;
  }

  sequence(indent: number): Yaml {
    const list: Yaml[] = [];
    while (this.i < this.ls.length) {
      const l = this.ls[this.i]!;
      // A key at the sequence's own indentation ends it ("key:" then "- item" lines).
      if (l.indent < indent || (l.indent === indent && !isItem(l))) break;
      if (l.indent > indent) throw new Error(`line ${l.no}: unexpected indentation`);
      const rest = l.text.slice(1).trimStart();
      if (rest === "") {
        this.i++;
        const next = this.ls[this.i];
        list.push(next && next.indent > indent ? this.block(next.indent) : null);
      } else if (KEY.test(rest)) {
        // "- key: value": a mapping whose keys line up with this first one.
        const at = l.indent + (l.text.length - rest.length);
        this.ls[this.i] = { indent: at, text: rest, no: l.no };
        list.push(this.mapping(at));
      } else {
        list.push(scalar(rest, l.no));
        this.i++;
      }
    }
    return list;
  }
}

/** The document in `source`. */
export function parseYaml(source: string): Yaml {
  const ls = lines(source);
  if (ls.length === 0) return null;
  const p = new Parser(ls);
  const doc = p.block(ls[0]!.indent);
  if (p.i !== ls.length) throw new Error(`line ${ls[p.i]!.no}: unexpected indentation`);
  return doc;
}

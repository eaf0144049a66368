/**
 * Two source rewrites for the CLI's bundles (bundle-cli.ts), both for the speed of the
 * code in them, not its meaning.
 *
 * esbuild turns every top-level `const` and `let` of a bundle into `var` (deliberately;
 * it has no option against it). V8 (Node 20) folds a module's or script's `const` into
 * the optimised code that reads it, and with it what is read through it: ptkit's hot
 * loops read their tables, enums and helpers through module-level `const` copies (see
 * block-walk.ts), which as `var`s are loaded and checked at every use instead. The
 * block decoder on the large bench trace, `--jobs 1`, from the ES modules' bundle:
 * 2,326 ms with `var`s, 2,088 with them `const` again (12 alternating runs each).
 * {@link constTopLevel} gives back `const` to the top-level `var`s nothing assigns to.
 *
 * esbuild also wraps each module that is only imported on demand (`import()`) in a
 * function that initialises it on first use, its top-level bindings `var`s assigned
 * there, which no rewrite can make `const`. {@link eagerImports} makes the on-demand
 * imports of a module static, for a bundle whose every module is then initialised
 * when it loads (its top level is declarations and small tables: a few milliseconds).
 */
import ts from "typescript";

/** A top-level `var` statement's names: all of them, destructured ones included. */
function boundNames(name: ts.BindingName, out: string[]): void {
  if (ts.isIdentifier(name)) {
    out.push(name.text);
    return;
  }
  for (const e of name.elements) if (!ts.isOmittedExpression(e)) boundNames(e.name, out);
}

/** The identifiers an assignment's target `n` writes (patterns included), into `out`. */
function assignedNames(n: ts.Expression, out: Set<string>): void {
  if (ts.isIdentifier(n)) out.add(n.text);
  else if (ts.isParenthesizedExpression(n)) assignedNames(n.expression, out);
  else if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.EqualsToken)
    assignedNames(n.left, out);
  else if (ts.isArrayLiteralExpression(n))
    for (const e of n.elements) assignedNames(ts.isSpreadElement(e) ? e.expression : e, out);
  else if (ts.isObjectLiteralExpression(n))
    for (const p of n.properties) {
      if (ts.isShorthandPropertyAssignment(p)) out.add(p.name.text);
      else if (ts.isPropertyAssignment(p)) assignedNames(p.initializer, out);
      else if (ts.isSpreadAssignment(p)) assignedNames(p.expression, out);
    }
}

/** Every name anything in `file` assigns to, in any scope (a local of the same name counts too). */
function namesAssigned(file: ts.SourceFile): Set<string> {
  const out = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (ts.isBinaryExpression(n)) {
      const k = n.operatorToken.kind;
      if (k >= ts.SyntaxKind.FirstAssignment && k <= ts.SyntaxKind.LastAssignment) assignedNames(n.left, out);
    } else if (ts.isPrefixUnaryExpression(n) || ts.isPostfixUnaryExpression(n)) {
      if (n.operator === ts.SyntaxKind.PlusPlusToken || n.operator === ts.SyntaxKind.MinusMinusToken)
        assignedNames(n.operand, out);
    } else if (ts.isForInStatement(n) || ts.isForOfStatement(n)) {
      if (!ts.isVariableDeclarationList(n.initializer)) assignedNames(n.initializer, out);
    }
    ts.forEachChild(n, visit);
  };
  visit(file);
  return out;
}

/**
 * `text` (a script or module) with each top-level `var` statement whose names nothing
 * in the file assigns to, and whose declarations all have an initialiser, declared
 * `const`; how many statements became `const` and how many stayed `var`. A name any
 * scope assigns to keeps its statement `var` (a local that shadows it included): the
 * rewrite never makes a binding constant that is written.
 */
export function constTopLevel(
  text: string,
  fileName = "bundle.js",
): { text: string; changed: number; kept: number } {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const assigned = namesAssigned(file);
  const at: number[] = [];
  let kept = 0;
  for (const st of file.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const list = st.declarationList;
    if ((list.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)) !== 0) continue;
    const names: string[] = [];
    let initialised = true;
    for (const d of list.declarations) {
      if (d.initializer === undefined) initialised = false;
      boundNames(d.name, names);
    }
    if (initialised && names.every((n) => !assigned.has(n))) at.push(list.getStart(file));
    else kept++;
  }
  let out = text;
  for (const start of at.reverse()) {
    if (out.slice(start, start + 3) !== "var") throw new Error(`${fileName}: expected "var" at ${start}`);
    out = `${out.slice(0, start)}const${out.slice(start + 3)}`;
  }
  return { text: out, changed: at.length, kept };
}

/**
 * `text` (an ES module) with each `import("./relative")` of a string literal replaced
 * by a promise of the namespace of a static `import * as` added at its top; undefined
 * when it has none. Other `import(...)`s stay: packages load when first asked for.
 * With `only`, a relative specifier not in it becomes a rejected promise instead: its
 * module is left out (the bundle never runs what loads it).
 */
export function eagerImports(
  text: string,
  fileName = "module.js",
  only?: ReadonlySet<string>,
): string | undefined {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const calls: { start: number; end: number; specifier: string }[] = [];
  const visit = (n: ts.Node): void => {
    if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments.length === 1 &&
      ts.isStringLiteral(n.arguments[0]!) &&
      /^\.\.?\//.test((n.arguments[0] as ts.StringLiteral).text)
    )
      calls.push({
        start: n.getStart(file),
        end: n.getEnd(),
        specifier: (n.arguments[0] as ts.StringLiteral).text,
      });
    ts.forEachChild(n, visit);
  };
  visit(file);
  if (calls.length === 0) return undefined;
  const names = new Map<string, string>();
  for (const c of calls)
    if (!names.has(c.specifier) && (only === undefined || only.has(c.specifier)))
      names.set(c.specifier, `__ptkitEager${names.size}`);
  let out = text;
  for (const c of [...calls].reverse()) {
    const name = names.get(c.specifier);
    const promise =
      name !== undefined
        ? `Promise.resolve(${name})`
        : `Promise.reject(new Error(${JSON.stringify(`${c.specifier} is not in this bundle`)}))`;
    out = `${out.slice(0, c.start)}${promise}${out.slice(c.end)}`;
  }
  const imports = [...names].map(([s, n]) => `import * as ${n} from ${JSON.stringify(s)};`);
  return `${imports.join("\n")}\n${out}`;
}

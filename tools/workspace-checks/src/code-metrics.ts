// Code metrics of the tree, for measuring a refactor before and after (issue 41): the
// longest functions and classes, the CustomObjectsApi call sites and the hand-written
// 404/409 checks outside the typed Run client. It reads the files git tracks, not the
// working copy's untracked ones, so two runs compare two commits.
//
//   node tools/workspace-checks/src/code-metrics.ts [--top-functions N] [--top-classes N] [--files]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import ts from 'typescript';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
const generatedRoot = 'libs/proto/src/generated/';
/** The lib that owns the Kubernetes calls and status-code handling; it does not count. */
const runClientRoot = 'libs/run-client/';

interface Span {
  file: string;
  line: number;
  lines: number;
  name: string;
}

interface ClassSpan extends Span {
  members: number;
}

interface StatusCheck {
  file: string;
  code: 404 | 409;
}

interface FileMetrics {
  functions: Span[];
  classes: ClassSpan[];
  customObjectCalls: number;
  customObjectClients: number;
  statusChecks: StatusCheck[];
}

const isTestFile = (file: string): boolean => file.endsWith('.test.ts');
/** The shipped code: the apps' and libs' `src`, but not the test harness lib. */
const isProductFile = (file: string): boolean =>
  !isTestFile(file) && /^(apps|libs)\/[^/]+\/src\//.test(file) && !file.startsWith('libs/testing/');

function trackedTypeScriptFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--', '*.ts'], { cwd: workspaceRoot, encoding: 'utf8' });
  return out
    .split('\0')
    .filter((file) => file !== '' && !file.startsWith(generatedRoot))
    .sort();
}

/** The method names of @kubernetes/client-node's CustomObjectsApi, read from its declarations. */
function customObjectsApiMethods(): Set<string> {
  const require = createRequire(join(workspaceRoot, 'package.json'));
  const entry = require.resolve('@kubernetes/client-node');
  const declarations = join(entry, '..', 'gen', 'apis', 'CustomObjectsApi.d.ts');
  const source = ts.createSourceFile(declarations, readFileSync(declarations, 'utf8'), ts.ScriptTarget.Latest);
  const methods = new Set<string>();
  source.forEachChild((node) => {
    if (!ts.isClassDeclaration(node) || node.name?.text !== 'CustomObjectsApiRequestFactory') return;
    for (const member of node.members) {
      if (ts.isMethodDeclaration(member) && ts.isIdentifier(member.name)) {
        methods.add(member.name.text);
        methods.add(`${member.name.text}WithHttpInfo`);
      }
    }
  });
  if (methods.size === 0) throw new Error(`no CustomObjectsApi methods found in ${declarations}`);
  return methods;
}

function propertyNameText(name: ts.PropertyName | ts.BindingName): string {
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)) {
    return name.text;
  }
  return '[computed]';
}

function classNameOf(node: ts.ClassLikeDeclaration): string {
  if (node.name) return node.name.text;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent)) return propertyNameText(parent.name);
  return '<anonymous class>';
}

/** A readable name for a function-like node: `Class.method`, `variable`, `callee(…) callback`. */
function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  const parent = node.parent;
  if (ts.isConstructorDeclaration(node) && ts.isClassLike(parent)) return `${classNameOf(parent)}.constructor`;
  if (node.name && ts.isClassLike(parent)) return `${classNameOf(parent)}.${propertyNameText(node.name)}`;
  if (node.name) return propertyNameText(node.name);
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return propertyNameText(parent.name);
  if (ts.isPropertyDeclaration(parent) && ts.isClassLike(parent.parent)) {
    return `${classNameOf(parent.parent)}.${propertyNameText(parent.name)}`;
  }
  if (ts.isCallExpression(parent) || ts.isNewExpression(parent)) {
    const callee = parent.expression.getText(source).replace(/\s+/g, ' ');
    return `${callee.length > 40 ? `…${callee.slice(-40)}` : callee}(…) callback`;
  }
  if (ts.isExportAssignment(parent)) return 'default export';
  return '<anonymous>';
}

function lineOf(source: ts.SourceFile, position: number): number {
  return source.getLineAndCharacterOfPosition(position).line + 1;
}

function spanOf(node: ts.Node, source: ts.SourceFile, file: string, name: string): Span {
  const line = lineOf(source, node.getStart(source));
  return { file, line, lines: lineOf(source, node.end) - line + 1, name };
}

function statusCodeOf(node: ts.Expression | undefined): 404 | 409 | undefined {
  if (node === undefined || !ts.isNumericLiteral(node)) return undefined;
  if (node.text === '404') return 404;
  if (node.text === '409') return 409;
  return undefined;
}

const comparisonOperators = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** `x === 404`, `409 !== y`, `case 404:`; a 404 that is not compared (a response sent) does not count. */
function statusCheckOf(node: ts.Node): 404 | 409 | undefined {
  if (ts.isBinaryExpression(node) && comparisonOperators.has(node.operatorToken.kind)) {
    return statusCodeOf(node.left) ?? statusCodeOf(node.right);
  }
  if (ts.isCaseClause(node)) return statusCodeOf(node.expression);
  return undefined;
}

function isCustomObjectsApiClient(node: ts.Node): boolean {
  if (!ts.isCallExpression(node) && !ts.isNewExpression(node)) return false;
  if (ts.isNewExpression(node)) return ts.isIdentifier(node.expression) && node.expression.text === 'CustomObjectsApi';
  const callee = node.expression;
  const calleeName = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : '';
  const [argument] = node.arguments;
  return calleeName === 'makeApiClient' && argument !== undefined && ts.isIdentifier(argument) && argument.text === 'CustomObjectsApi';
}

function measureFile(file: string, methods: Set<string>): FileMetrics {
  const text = readFileSync(join(workspaceRoot, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const metrics: FileMetrics = { functions: [], classes: [], customObjectCalls: 0, customObjectClients: 0, statusChecks: [] };
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      metrics.functions.push(spanOf(node, source, file, functionName(node, source)));
    }
    if (ts.isClassLike(node)) {
      metrics.classes.push({ ...spanOf(node, source, file, classNameOf(node)), members: node.members.length });
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && methods.has(node.expression.name.text)) {
      metrics.customObjectCalls += 1;
    }
    if (isCustomObjectsApiClient(node)) metrics.customObjectClients += 1;
    const code = statusCheckOf(node);
    if (code !== undefined) metrics.statusChecks.push({ file, code });
    ts.forEachChild(node, visit);
  };
  visit(source);
  return metrics;
}

function pad(value: number | string, width: number): string {
  return String(value).padStart(width);
}

function printSpans<T extends Span>(title: string, spans: T[], top: number, extra?: (span: T) => string): void {
  console.log(`\n${title}`);
  for (const span of [...spans].sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file)).slice(0, top)) {
    console.log(`${pad(span.lines, 5)}  ${extra ? extra(span) : ''}${span.file}:${span.line}  ${span.name}`);
  }
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

interface Tally {
  calls: number;
  clients: number;
  callFiles: Map<string, number>;
  checks: StatusCheck[];
}

function tally(measured: [string, FileMetrics][]): Tally {
  const outside = measured.filter(([file]) => !file.startsWith(runClientRoot));
  const callFiles = new Map<string, number>();
  for (const [file, metrics] of outside) {
    const sites = metrics.customObjectCalls + metrics.customObjectClients;
    if (sites > 0) callFiles.set(file, sites);
  }
  return {
    calls: outside.reduce((sum, [, metrics]) => sum + metrics.customObjectCalls, 0),
    clients: outside.reduce((sum, [, metrics]) => sum + metrics.customObjectClients, 0),
    callFiles,
    checks: outside.flatMap(([, metrics]) => metrics.statusChecks),
  };
}

function printTally(label: string, { calls, clients, callFiles, checks }: Tally, listFiles: boolean): void {
  console.log(
    `${label}: CustomObjectsApi ${calls + clients} call sites in ${callFiles.size} files ` +
      `(${calls} method calls, ${clients} makeApiClient(CustomObjectsApi)/new CustomObjectsApi)`,
  );
  for (const code of [404, 409] as const) {
    const ofCode = checks.filter((check) => check.code === code);
    console.log(`${label}: ${code} checks ${ofCode.length} in ${countBy(ofCode, (check) => check.file).size} files`);
  }
  if (!listFiles) return;
  for (const [file, sites] of callFiles) console.log(`  CustomObjectsApi ${pad(sites, 3)}  ${file}`);
  for (const [key, count] of countBy(checks, (check) => `${check.code}  ${check.file}`)) console.log(`  status ${key}: ${count}`);
}

function main(): void {
  const { values } = parseArgs({
    options: {
      'top-functions': { type: 'string', default: '15' },
      'top-classes': { type: 'string', default: '10' },
      files: { type: 'boolean', default: false },
    },
  });
  const methods = customObjectsApiMethods();
  const measured = trackedTypeScriptFiles().map((file): [string, FileMetrics] => [file, measureFile(file, methods)]);
  const sources = measured.filter(([file]) => !isTestFile(file));
  const tests = measured.filter(([file]) => isTestFile(file));
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: workspaceRoot, encoding: 'utf8' }).trim();

  console.log(`code metrics at ${commit}: git ls-files *.ts without ${generatedRoot}`);
  console.log(`source files (not *.test.ts): ${sources.length}; test files: ${tests.length}`);
  printSpans(
    'longest functions and methods (source): lines  file:line  name',
    sources.flatMap(([, metrics]) => metrics.functions),
    Number(values['top-functions']),
  );
  printSpans(
    'longest classes (source): lines  members  file:line  name',
    sources.flatMap(([, metrics]) => metrics.classes),
    Number(values['top-classes']),
    (span) => `${pad(span.members, 3)}  `,
  );
  console.log(`\noutside ${runClientRoot} (product: the part of source in apps/*/src and libs/*/src, but libs/testing):`);
  printTally('source ', tally(sources), values.files);
  printTally('product', tally(sources.filter(([file]) => isProductFile(file))), false);
  printTally('tests  ', tally(tests), values.files);
}

main();

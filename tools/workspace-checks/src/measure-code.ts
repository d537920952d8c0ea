// The measurements of code-metrics.ts, shared with the size check against its baseline
// (code-size.ts): spans of functions and classes, CustomObjectsApi call sites and 404/409
// checks per file. It reads the files git tracks, not untracked ones, so two runs compare two commits.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import ts from 'typescript';
import { layerMarkers } from './layer-markers.ts';
import type { LayerMarkers } from './layer-markers.ts';

export const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
export const generatedRoot = 'libs/proto/src/generated/';
/** The lib that owns the Kubernetes calls and status-code handling; it does not count. */
export const runClientRoot = 'libs/run-client/';

export interface Span {
  file: string;
  line: number;
  lines: number;
  name: string;
}

export interface ClassSpan extends Span {
  members: number;
}

export interface StatusCheck {
  file: string;
  code: 404 | 409;
}

export interface FileMetrics {
  functions: Span[];
  classes: ClassSpan[];
  customObjectCalls: number;
  customObjectClients: number;
  statusChecks: StatusCheck[];
  markers: LayerMarkers;
}

export const isTestFile = (file: string): boolean => file.endsWith('.test.ts');
/** The shipped code: the apps' and libs' `src`, but not the test harness lib. */
export const isProductFile = (file: string): boolean =>
  !isTestFile(file) && /^(apps|libs)\/[^/]+\/src\//.test(file) && !file.startsWith('libs/testing/');

export function trackedTypeScriptFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--', '*.ts'], { cwd: workspaceRoot, encoding: 'utf8' });
  return out
    .split('\0')
    .filter((file) => file !== '' && !file.startsWith(generatedRoot))
    .sort();
}

/** The method names of @kubernetes/client-node's CustomObjectsApi, read from its declarations. */
export function customObjectsApiMethods(): Set<string> {
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

export function measureFile(file: string, methods: Set<string>): FileMetrics {
  const text = readFileSync(join(workspaceRoot, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const metrics: Omit<FileMetrics, 'markers'> = {
    functions: [],
    classes: [],
    customObjectCalls: 0,
    customObjectClients: 0,
    statusChecks: [],
  };
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
  return { ...metrics, markers: layerMarkers(file, source) };
}

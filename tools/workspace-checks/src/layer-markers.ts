// The marks a controller leaves when it writes by hand what the shared controller layer
// (controller-runtime, run-client) gives it: counted per file, so that code-metrics prints
// them for two commits and a refactor shows its before and after.
import ts from 'typescript';

export interface LayerMarkers {
  /** `x as unknown as T`: a cast that the type system cannot check at all. */
  doubleCasts: number;
  /** `type X = Y & KubernetesObject`: a kind re-typed where a typed client or informer should hand it over. */
  kubernetesObjectAliases: number;
  /** `splitObjectKey(key)` in a method or function named `reconcile`: the opening asReconciler does once (key, cache read, NotFound, deletion). */
  reconcileOpenings: number;
  /** `.replaceStatus(...)` outside a `fencedWrite`/`writeTransition` step: a status write with its own conflict and no-change rules. */
  statusWrites: number;
  /** `createNamespacedEvent` / `patchNamespacedEvent`: a core/v1 Event built by hand. */
  handBuiltEvents: number;
  /** A node:http server that serves `/metrics`: a plaintext listener with its own rules. */
  metricsListeners: number;
}

export const NO_MARKERS: Readonly<LayerMarkers> = {
  doubleCasts: 0,
  kubernetesObjectAliases: 0,
  reconcileOpenings: 0,
  statusWrites: 0,
  handBuiltEvents: 0,
  metricsListeners: 0,
};

/** Where each mark is the layer's own implementation, not a hand-written copy. */
const OWNERS: Readonly<Partial<Record<keyof LayerMarkers, string>>> = {
  kubernetesObjectAliases: 'libs/controller-runtime/',
  reconcileOpenings: 'libs/controller-runtime/',
  statusWrites: 'libs/run-client/',
  handBuiltEvents: 'libs/controller-runtime/',
  metricsListeners: 'libs/controller-runtime/',
};

const EVENT_WRITES = new Set(['createNamespacedEvent', 'patchNamespacedEvent']);
/** The one fenced writer's entry points: a replaceStatus handed to them is theirs. */
const FENCED_WRITERS = new Set(['fencedWrite', 'writeTransition']);

/** Where the visit is: inside a function named `reconcile`, inside a fenced writer's call. */
interface Context {
  inReconcile: boolean;
  inFencedWrite: boolean;
}

function declaredName(node: ts.Node): string | undefined {
  if ((ts.isMethodDeclaration(node) || ts.isFunctionDeclaration(node)) && node.name !== undefined && ts.isIdentifier(node.name))
    return node.name.text;
  if (
    (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) &&
    (ts.isPropertyDeclaration(node.parent) || ts.isVariableDeclaration(node.parent)) &&
    ts.isIdentifier(node.parent.name)
  ) {
    return node.parent.name.text;
  }
  return undefined;
}

function contextOf(node: ts.Node, outer: Context): Context {
  if (ts.isFunctionLike(node)) return { ...outer, inReconcile: declaredName(node) === 'reconcile' };
  if (ts.isCallExpression(node) && FENCED_WRITERS.has(calledName(node))) return { ...outer, inFencedWrite: true };
  return outer;
}

function calledName(node: ts.CallExpression): string {
  const callee = node.expression;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  return ts.isIdentifier(callee) ? callee.text : '';
}

function isDoubleCast(node: ts.Node): boolean {
  return ts.isAsExpression(node) && ts.isAsExpression(node.expression) && node.expression.type.kind === ts.SyntaxKind.UnknownKeyword;
}

function isKubernetesObjectAlias(node: ts.Node): boolean {
  if (!ts.isTypeAliasDeclaration(node) || !ts.isIntersectionTypeNode(node.type)) return false;
  return node.type.types.some((part) => ts.isTypeReferenceNode(part) && part.typeName.getText() === 'KubernetesObject');
}

/** The marks of one parsed file (`file`: its path from the workspace root). */
export function layerMarkers(file: string, source: ts.SourceFile): LayerMarkers {
  const found: LayerMarkers = { ...NO_MARKERS };
  const visit = (node: ts.Node, outer: Context): void => {
    const context = contextOf(node, outer);
    if (isDoubleCast(node)) found.doubleCasts += 1;
    if (isKubernetesObjectAlias(node)) found.kubernetesObjectAliases += 1;
    if (ts.isCallExpression(node)) {
      const name = calledName(node);
      if (name === 'splitObjectKey' && context.inReconcile) found.reconcileOpenings += 1;
      if (name === 'replaceStatus' && !context.inFencedWrite) found.statusWrites += 1;
      if (EVENT_WRITES.has(name)) found.handBuiltEvents += 1;
    }
    ts.forEachChild(node, (child) => {
      visit(child, context);
    });
  };
  visit(source, { inReconcile: false, inFencedWrite: false });
  const text = source.text;
  if (/import \{[^}]*\bcreateServer\b[^}]*\} from 'node:http'/.test(text) && text.includes("'/metrics'")) found.metricsListeners = 1;
  for (const [marker, owner] of Object.entries(OWNERS) as [keyof LayerMarkers, string][]) {
    if (file.startsWith(owner)) found[marker] = 0;
  }
  return found;
}

export function addMarkers(total: LayerMarkers, more: Readonly<LayerMarkers>): LayerMarkers {
  const sum: LayerMarkers = { ...total };
  for (const marker of Object.keys(sum) as (keyof LayerMarkers)[]) sum[marker] += more[marker];
  return sum;
}

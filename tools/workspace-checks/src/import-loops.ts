import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

/**
 * The loops of relative imports among `files` (paths relative to `root`): every group of
 * files that import each other around a circle, type-only imports and re-exports included,
 * each as its files sorted, the groups sorted. Imports between projects are nx's to check
 * (`@nx/enforce-module-boundaries` refuses circular project dependencies); inside a project
 * only this sees them. It only scans the import statements, so a whole tree takes a second.
 */
export function importLoops(root: string, files: readonly string[]): string[][] {
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((specifier) => specifier.startsWith('./') || specifier.startsWith('../'))
      .map((specifier) => resolveRelative(known, file, specifier))
      .filter((target) => target !== undefined);
    edges.set(file, targets);
  }
  return stronglyConnected(files, edges)
    .filter((group) => group.length > 1 || (edges.get(group[0] ?? '') ?? []).includes(group[0] ?? ''))
    .map((group) => group.sort())
    .sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}

function resolveRelative(known: Set<string>, from: string, specifier: string): string | undefined {
  const base = normalize(join(dirname(from), specifier));
  return [base, `${base}.ts`, join(base, 'index.ts')].find((candidate) => known.has(candidate));
}

/** Tarjan's algorithm, iterative so that a long chain of imports cannot overflow the stack. */
function stronglyConnected(nodes: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let next = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next);
    next += 1;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame === undefined) break;
      const targets = edges.get(frame.node) ?? [];
      const target = targets[frame.edge];
      if (target !== undefined) {
        frame.edge += 1;
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next);
          next += 1;
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edge: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node) ?? 0, index.get(target) ?? 0));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node) ?? 0, low.get(frame.node) ?? 0));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const group: string[] = [];
      for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
        onStack.delete(member);
        group.push(member);
        if (member === frame.node) break;
      }
      groups.push(group);
    }
  }
  return groups;
}

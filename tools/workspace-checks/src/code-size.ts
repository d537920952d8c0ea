// The size rule of production code: no function over FUNCTION_LINE_LIMIT lines, no class
// over CLASS_MEMBER_LIMIT members, except the offenders the baseline file lists (the ones
// there were when the rule came). A listed offender may shrink under the limit and leave the
// list; a new one, or one renamed, fails.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClassSpan, Span } from './measure-code.ts';

export const FUNCTION_LINE_LIMIT = 60;
export const CLASS_MEMBER_LIMIT = 25;
export const BASELINE_FILE = join(import.meta.dirname, '..', 'code-size-baseline.json');

/** `file name`: a name alone is not unique across files, a line number moves with every edit above it. */
export type OffenderKey = string;

/** The offenders allowed to stay, with their size when listed (lines of a function, members of a class). */
export interface SizeBaseline {
  functions: Record<OffenderKey, number>;
  classes: Record<OffenderKey, number>;
}

export interface Offender {
  key: OffenderKey;
  size: number;
}

export interface SizeVerdict {
  /** Over the limit and not in the baseline: these fail. */
  newFunctions: Offender[];
  newClasses: Offender[];
  /** In the baseline but no longer over the limit (or gone): they may be removed from it. */
  leftFunctions: OffenderKey[];
  leftClasses: OffenderKey[];
}

export const keyOf = (span: Span): OffenderKey => `${span.file} ${span.name}`;

/** The largest size per key: two spans of one name in one file are one entry. */
function offenders<T extends Span>(spans: readonly T[], size: (span: T) => number, limit: number): Map<OffenderKey, number> {
  const found = new Map<OffenderKey, number>();
  for (const span of spans) {
    if (size(span) <= limit) continue;
    found.set(keyOf(span), Math.max(found.get(keyOf(span)) ?? 0, size(span)));
  }
  return found;
}

export function functionOffenders(functions: readonly Span[]): Map<OffenderKey, number> {
  return offenders(functions, (span) => span.lines, FUNCTION_LINE_LIMIT);
}

export function classOffenders(classes: readonly ClassSpan[]): Map<OffenderKey, number> {
  return offenders(classes, (span) => span.members, CLASS_MEMBER_LIMIT);
}

function compare(found: Map<OffenderKey, number>, allowed: Record<OffenderKey, number>): { added: Offender[]; left: OffenderKey[] } {
  const added = [...found]
    .filter(([key]) => !Object.hasOwn(allowed, key))
    .map(([key, size]) => ({ key, size }))
    .sort((a, b) => a.key.localeCompare(b.key));
  const left = Object.keys(allowed)
    .filter((key) => !found.has(key))
    .sort();
  return { added, left };
}

/** Production functions and classes measured against the baseline. */
export function judgeSizes(functions: readonly Span[], classes: readonly ClassSpan[], baseline: SizeBaseline): SizeVerdict {
  const fn = compare(functionOffenders(functions), baseline.functions);
  const cls = compare(classOffenders(classes), baseline.classes);
  return { newFunctions: fn.added, newClasses: cls.added, leftFunctions: fn.left, leftClasses: cls.left };
}

export function readBaseline(file = BASELINE_FILE): SizeBaseline {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<SizeBaseline>;
  return { functions: parsed.functions ?? {}, classes: parsed.classes ?? {} };
}

/** The baseline without the entries that left it; never adds one (a new offender is shortened, not listed). */
export function prunedBaseline(baseline: SizeBaseline, verdict: SizeVerdict): SizeBaseline {
  const without = (entries: Record<OffenderKey, number>, left: readonly OffenderKey[]): Record<OffenderKey, number> =>
    Object.fromEntries(Object.entries(entries).filter(([key]) => !left.includes(key)));
  return { functions: without(baseline.functions, verdict.leftFunctions), classes: without(baseline.classes, verdict.leftClasses) };
}

export function writeBaseline(baseline: SizeBaseline, file = BASELINE_FILE): void {
  const sorted = (entries: Record<OffenderKey, number>): Record<OffenderKey, number> =>
    Object.fromEntries(Object.entries(entries).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(file, `${JSON.stringify({ functions: sorted(baseline.functions), classes: sorted(baseline.classes) }, null, 2)}\n`);
}

/** The verdict as lines for a person: what fails and what may leave the baseline. */
export function describeVerdict(verdict: SizeVerdict): string[] {
  return [
    ...verdict.newFunctions.map(({ key, size }) => `new function over ${FUNCTION_LINE_LIMIT} lines: ${key} (${size} lines)`),
    ...verdict.newClasses.map(({ key, size }) => `new class over ${CLASS_MEMBER_LIMIT} members: ${key} (${size} members)`),
    ...[...verdict.leftFunctions, ...verdict.leftClasses].map((key) => `no longer over its limit, may leave the baseline: ${key}`),
  ];
}

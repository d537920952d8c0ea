// Code metrics of the tree, for measuring a refactor before and after: the longest
// functions and classes, the CustomObjectsApi call sites and the hand-written 404/409 checks
// outside the typed Run client, what the shared controller layer replaces (layer-markers.ts); and the size rule (code-size.ts): it exits 1 when a production
// function over the line limit or a class over the member limit is not in the committed baseline.
//
//   node tools/workspace-checks/src/code-metrics.ts [--top-functions N] [--top-classes N] [--files] [--prune-baseline]
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import {
  customObjectsApiMethods,
  generatedRoot,
  isProductFile,
  isTestFile,
  measureFile,
  runClientRoot,
  trackedTypeScriptFiles,
  workspaceRoot,
} from './measure-code.ts';
import type { FileMetrics, Span, StatusCheck } from './measure-code.ts';
import { NO_MARKERS, addMarkers } from './layer-markers.ts';
import type { LayerMarkers } from './layer-markers.ts';
import {
  CLASS_MEMBER_LIMIT,
  FUNCTION_LINE_LIMIT,
  classOffenders,
  describeVerdict,
  functionOffenders,
  judgeSizes,
  prunedBaseline,
  readBaseline,
  writeBaseline,
} from './code-size.ts';

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
      'prune-baseline': { type: 'boolean', default: false },
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
  printMarkers(
    sources.filter(([file]) => isProductFile(file)),
    values.files,
  );
  checkSizes(
    sources.filter(([file]) => isProductFile(file)),
    values['prune-baseline'],
  );
}

const MARKER_LABELS: Readonly<Record<keyof LayerMarkers, string>> = {
  doubleCasts: '`as unknown as` casts',
  kubernetesObjectAliases: '`& KubernetesObject` type aliases',
  reconcileOpenings: 'hand-written reconcile openings (splitObjectKey)',
  statusWrites: 'hand-written status writes (replaceStatus)',
  handBuiltEvents: 'hand-built Events',
  metricsListeners: 'plaintext metrics listeners',
};

/** What the shared controller layer replaces, counted over the production files (layer-markers.ts). */
function printMarkers(product: [string, FileMetrics][], listFiles: boolean): void {
  const total = product.reduce((sum, [, metrics]) => addMarkers(sum, metrics.markers), NO_MARKERS);
  console.log('\nproduct, outside the controller layer (controller-runtime, run-client):');
  for (const [marker, label] of Object.entries(MARKER_LABELS) as [keyof LayerMarkers, string][]) {
    console.log(`  ${pad(total[marker], 3)}  ${label}`);
    if (!listFiles) continue;
    for (const [file, metrics] of product)
      if (metrics.markers[marker] > 0) console.log(`         ${pad(metrics.markers[marker], 3)}  ${file}`);
  }
}

/** The size rule over the production files: exit code 1 for an offender the baseline does not list. */
function checkSizes(product: [string, FileMetrics][], prune: boolean): void {
  const functions = product.flatMap(([, metrics]) => metrics.functions);
  const classes = product.flatMap(([, metrics]) => metrics.classes);
  const baseline = readBaseline();
  const verdict = judgeSizes(functions, classes, baseline);
  console.log(
    `\nproduct: functions over ${FUNCTION_LINE_LIMIT} lines ${functionOffenders(functions).size}, ` +
      `classes over ${CLASS_MEMBER_LIMIT} members ${classOffenders(classes).size} ` +
      `(baseline ${Object.keys(baseline.functions).length} and ${Object.keys(baseline.classes).length}: tools/workspace-checks/code-size-baseline.json)`,
  );
  for (const line of describeVerdict(verdict)) console.log(`  ${line}`);
  if (prune && verdict.leftFunctions.length + verdict.leftClasses.length > 0) {
    writeBaseline(prunedBaseline(baseline, verdict));
    console.log('  baseline pruned');
  }
  if (verdict.newFunctions.length + verdict.newClasses.length > 0) {
    console.log('  shorten them (a new offender is not added to the baseline)');
    process.exitCode = 1;
  }
}

main();

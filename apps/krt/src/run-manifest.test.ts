import { CliError } from './exit-codes.ts';
import { generateNameOf, runFromManifest } from './run-manifest.ts';

const SPEC = 'spec:\n  runtime: python\n  source: {inline: "print(1)"}\n  mode: {task: {}}\n';
const RUN = `apiVersion: kruntimes.io/v1alpha1\nkind: Run\n`;

describe('runFromManifest', () => {
  const options = { file: 'jobs/report.yaml', namespace: 'team' };
  it.each<[string, string, { name?: string }, Record<string, unknown>]>([
    ['the manifest name', `${RUN}metadata: {name: nightly, labels: {a: b}}\n${SPEC}`, {}, { name: 'nightly', labels: { a: 'b' } }],
    ['--name wins', `${RUN}metadata: {name: nightly}\n${SPEC}`, { name: 'other' }, { name: 'other' }],
    ['its generateName', `${RUN}metadata: {generateName: nightly-}\n${SPEC}`, {}, { generateName: 'nightly-' }],
    ['no name: from the file', `${RUN}${SPEC}`, {}, { generateName: 'report-' }],
    [
      'server-set fields dropped; its own namespace kept out of the body',
      `${RUN}metadata: {name: a, namespace: team, uid: x, resourceVersion: "1", annotations: {n: v}}\n${SPEC}status: {phase: Succeeded}\n`,
      {},
      { name: 'a', annotations: { n: 'v' } },
    ],
  ])('%s', (_name, text, extra, metadata) => {
    const run = runFromManifest(text, { ...options, ...extra });
    expect(run.metadata).toEqual(metadata);
    expect(run).toEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata,
      spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
    });
  });

  it('reads JSON as well', () => {
    const run = runFromManifest(
      JSON.stringify({ apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', metadata: { name: 'j' }, spec: { runtime: 'bash' } }),
      options,
    );
    expect(run.metadata.name).toBe('j');
  });

  it.each([
    ['two documents', `${RUN}${SPEC}---\n${RUN}${SPEC}`, /one Run per file, found 2 documents/],
    ['nothing', '', /one Run per file, found 0 documents/],
    ['broken YAML', 'kind: [Run\n', /not valid YAML/],
    ['a list', '- a\n- b\n', /not a Run manifest/],
    ['another kind', 'apiVersion: v1\nkind: Pod\nspec: {}\n', /kind must be Run, not "Pod"/],
    ['another version', 'apiVersion: kruntimes.io/v2\nkind: Run\nspec: {}\n', /apiVersion must be kruntimes.io\/v1alpha1/],
    ['no spec', `${RUN}metadata: {name: a}\n`, /a Run needs a spec/],
    [
      'another namespace',
      `${RUN}metadata: {name: a, namespace: prod}\n${SPEC}`,
      /is for namespace "prod", krt works in "team" \(give -n "prod"\)/,
    ],
  ])('refuses %s (exit 2)', (_name, text, message) => {
    let thrown: unknown;
    try {
      runFromManifest(text, options);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CliError);
    expect((thrown as CliError).exitCode).toBe(2);
    expect((thrown as CliError).message).toMatch(message);
  });
});

test.each([
  ['jobs/report.yaml', 'report-'],
  ['Nightly Report.YML', 'nightly-report-'],
  ['-', 'run-'],
  ['___.yaml', 'run-'],
  [`${'x'.repeat(60)}.yaml`, `${'x'.repeat(40)}-`],
])('generateNameOf(%s) is %s', (file, name) => {
  expect(generateNameOf(file)).toBe(name);
});

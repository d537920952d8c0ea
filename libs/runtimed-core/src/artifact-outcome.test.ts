import type { Run } from '@kruntimes/api';
import { pino } from 'pino';
import { ArtifactGrants } from './artifact-grants.ts';
import { grantAccess } from './artifact-outcome.ts';
import type { TaskArtifacts } from './artifact-outcome.ts';
import type { ReconcileContext } from './run-work.ts';

const logger = pino({ level: 'silent' });
const unused = (): never => {
  throw new Error('not called by register');
};
const grants = new ArtifactGrants({
  runs: { verify: unused, transition: unused },
  stores: unused,
  leaseExpiresAtMs: () => undefined,
  runtime: 'rt',
  capabilities: [],
  logger,
});
const artifacts: TaskArtifacts = {
  grants,
  grantAddress: '127.0.0.1:4567',
  verification: { verify: unused, removeOthers: unused },
  checkpoints: { load: unused },
};
const epoch = { namespace: 'ns', name: 'r', uid: 'u-1', attempt: 2, podUID: 'p-1' };
const execution = { id: 'u-1/2', abort: new AbortController(), done: Promise.resolve() };

function ctx(spec: Partial<Run['spec']>): ReconcileContext {
  const run: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'r', namespace: 'ns', uid: 'u-1' },
    spec: { runtime: 'rt', source: { inline: 'true' }, mode: { task: {} }, ...spec },
  };
  return { key: 'ns/r', run, epoch, log: logger };
}

describe('grantAccess', () => {
  it('a Run without spec.artifacts gets no access (no endpoint, no token)', () => {
    expect(grantAccess(artifacts, ctx({}), execution)).toBeUndefined();
    expect(grants.size).toBe(0);
  });

  it('a Run with spec.artifacts gets the grant address, a fresh token and its declaration; withdraw removes the token', () => {
    const declared = { store: 's', outputs: [{ id: 'report.csv', maxBytes: 10, mediaType: 'text/csv' }] };
    const first = grantAccess(artifacts, ctx({ artifacts: declared }), execution);
    const second = grantAccess(artifacts, ctx({ artifacts: declared }), execution);
    expect(first?.access).toEqual({
      grantAddress: '127.0.0.1:4567',
      grantToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) as string,
      declared: [{ artifactId: 'report.csv', maxBytes: 10, mediaType: 'text/csv', optional: false }],
    });
    expect(second?.access.grantToken).not.toBe(first?.access.grantToken);
    expect(grants.size).toBe(2);
    first?.withdraw();
    second?.withdraw();
    expect(grants.size).toBe(0);
  });
});

import type { ArtifactStore } from '@kruntimes/api';
import { artifactStoreLocation } from './resolve-artifact-store.ts';

function store(spec: Partial<ArtifactStore['spec']>): ArtifactStore {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: 's', namespace: 'ns' },
    spec: { endpoint: 'https://s3.example.com', bucket: 'b', credentialsSecretRef: { name: 'c' }, ...spec },
  };
}

test.each([
  ['defaults: us-east-1, path style, no prefix', {}, { region: 'us-east-1', forcePathStyle: true }],
  ['a prefix is kept', { prefix: 'team/x' }, { prefix: 'team/x', region: 'us-east-1', forcePathStyle: true }],
  ['region and virtual hosts as given', { region: 'eu-west-1', forcePathStyle: false }, { region: 'eu-west-1', forcePathStyle: false }],
])('artifactStoreLocation: %s', (_name, spec, expected) => {
  expect(artifactStoreLocation(store(spec))).toEqual({ endpoint: 'https://s3.example.com', bucket: 'b', ...expected });
});

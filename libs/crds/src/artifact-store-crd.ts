import {
  ARTIFACT_STORE_KIND,
  ARTIFACT_STORE_PLURAL,
  ARTIFACT_STORE_SHORT_NAMES,
  ARTIFACT_STORE_SINGULAR,
  BOUNDS,
  DEFAULTS,
  DNS1123_SUBDOMAIN_PATTERN,
  DURATION_PATTERN,
} from '@kruntimes/api';
import { conditionsSchema } from './conditions-schema.ts';
import { namespacedCrd } from './crd.ts';
import { boolean, dateTime, integer, object, string } from './schema.ts';
import type { CustomResourceDefinition } from './schema.ts';

/** S3 bucket naming rules (3-63 characters, lowercase, digits, dots and hyphens). */
const BUCKET_PATTERN = '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$';
/** Key segments without empty ones, `.` or `..`, and no leading or trailing slash. */
const PREFIX_PATTERN = '^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$';

const spec = object(
  'An S3-compatible bucket that task Runs of this namespace upload artifacts to.',
  {
    endpoint: string('Base URL of the S3 API, e.g. https://s3.example.com. http is accepted only for a loopback address.', {
      minLength: 8,
      maxLength: 2048,
      pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$',
    }),
    bucket: string('Bucket name.', { pattern: BUCKET_PATTERN, maxLength: 63 }),
    prefix: string('Leading part of every object key, without leading or trailing slash.', {
      pattern: PREFIX_PATTERN,
      maxLength: BOUNDS.artifactPrefixBytes,
    }),
    region: string('Signing region.', { minLength: 1, maxLength: 64, default: DEFAULTS.artifactStoreRegion }),
    forcePathStyle: boolean('Path-style addressing (endpoint/bucket/key) instead of virtual-hosted buckets.', { default: true }),
    credentialsSecretRef: object(
      'A Secret in this namespace with the keys accessKeyId and secretAccessKey. Read by runtimed, the controller-manager and `krt artifacts`; never given to user code.',
      { name: string('Secret name.', { pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: BOUNDS.dnsSubdomainBytes }) },
      { required: ['name'] },
    ),
    retentionAfterRunDeleted: string('How long the objects of a deleted Run are kept, counted from their upload (0s: removed at once).', {
      pattern: DURATION_PATTERN,
      minLength: 2,
      maxLength: 24,
      default: DEFAULTS.artifactRetentionAfterRunDeleted,
    }),
  },
  {
    required: ['endpoint', 'bucket', 'credentialsSecretRef'],
    'x-kubernetes-validations': [
      {
        rule: "self.endpoint.startsWith('https://') || self.endpoint.matches('^http://(127\\\\.[0-9]+\\\\.[0-9]+\\\\.[0-9]+|localhost|\\\\[::1\\\\])(:[0-9]+)?(/.*)?$')",
        message: 'endpoint must be https:// (plain http only for a loopback address)',
        fieldPath: '.endpoint',
      },
      {
        // Moving a store under existing objects would orphan them: make a new ArtifactStore instead.
        rule: 'self.bucket == oldSelf.bucket && self.endpoint == oldSelf.endpoint && (has(self.prefix) == has(oldSelf.prefix)) && (!has(self.prefix) || self.prefix == oldSelf.prefix)',
        message: 'endpoint, bucket and prefix are immutable: create another ArtifactStore',
      },
    ],
  },
);

const status = object('Observed state, written by the controller-manager.', {
  observedGeneration: integer('metadata.generation last acted on.', { minimum: 0 }),
  conditions: conditionsSchema,
  lastCleanupTime: dateTime('When the retention controller last finished a pass over the store.'),
});

export function artifactStoreCrd(): CustomResourceDefinition {
  return namespacedCrd({
    kind: ARTIFACT_STORE_KIND,
    plural: ARTIFACT_STORE_PLURAL,
    singular: ARTIFACT_STORE_SINGULAR,
    shortNames: ARTIFACT_STORE_SHORT_NAMES,
    description: 'An S3-compatible object store for the artifacts of task Runs in this namespace.',
    spec,
    status,
    printerColumns: [
      { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpoint' },
      { name: 'Bucket', type: 'string', jsonPath: '.spec.bucket' },
      { name: 'Prefix', type: 'string', jsonPath: '.spec.prefix' },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

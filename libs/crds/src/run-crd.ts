import {
  RUN_RUNTIME_FIELD,
  ARTIFACT_DIGEST_PATTERN,
  ARTIFACT_ID_PATTERN,
  BOUNDS,
  CHECKPOINT_ARTIFACT_ID,
  RESERVED_ARTIFACT_ID_PREFIX,
  RESPONSE_ID_PATTERN,
  DEFAULTS,
  DNS1123_LABEL_PATTERN,
  DNS1123_SUBDOMAIN_PATTERN,
  DURATION_PATTERN,
  ENDPOINT_PROTOCOLS,
  LOCAL_RESULT_PHASES,
  LOCAL_RUN_ID_PATTERN,
  MEDIA_TYPE_PATTERN,
  OUTPUT_KEY_PATTERN,
  RUN_KIND,
  RUN_PHASES,
  RUN_PLURAL,
  RUN_SHORT_NAMES,
  RUN_SINGULAR,
} from '@kruntimes/api';
import { TERMINAL_PHASES } from '@kruntimes/run-state';
import { conditionsSchema } from './conditions-schema.ts';
import { namespacedCrd } from './crd.ts';
import { array, boolean, celStringList, dateTime, immutableOptional, immutableRequired, int32, integer, object, string } from './schema.ts';
import type { CustomResourceDefinition, JsonSchema } from './schema.ts';

/** Base64 length of the largest PEM bundle allowed. */
const caBundleBase64Length = Math.ceil(BOUNDS.caBundleBytes / 3) * 4;

const source = object(
  'The program: exactly one of inline and configMapKeyRef.',
  {
    inline: string('Source code inline.', { maxLength: BOUNDS.inlineSourceBytes }),
    configMapKeyRef: object(
      'A key of a ConfigMap in the Run namespace holding the source.',
      {
        name: string('ConfigMap name.', { pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: BOUNDS.dnsSubdomainBytes }),
        key: string('Key in the ConfigMap.', { pattern: '^[-._a-zA-Z0-9]+$', maxLength: BOUNDS.dnsSubdomainBytes }),
      },
      { required: ['name', 'key'] },
    ),
    digest: string('The sha256 the source must have (`sha256:<64 hex>`); the snapshot is refused otherwise (set by krt retry).', {
      pattern: ARTIFACT_DIGEST_PATTERN,
      maxLength: 71,
    }),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: 'has(self.inline) != has(self.configMapKeyRef)',
        message: 'exactly one of source.inline and source.configMapKeyRef must be set',
      },
    ],
  },
);

const mode = object(
  'How the program runs: exactly one of task and function.',
  {
    task: object('Run the program once to completion.', {
      args: array('Arguments passed to the program.', string('An argument.', { maxLength: 4096 }), { maxItems: 64 }),
    }),
    function: object(
      'Register a handler and serve invokes through the runtime gateway.',
      {
        handler: string('Python: `function` or `module:function`; Bash: a shell function name.', {
          minLength: 1,
          maxLength: BOUNDS.handlerBytes,
          pattern: '^[A-Za-z_][A-Za-z0-9_.]*(:[A-Za-z_][A-Za-z0-9_]*)?$',
        }),
        idleTimeoutSeconds: int32('End the Run (Timeout, reason IdleTimeout) after this long without invocation activity.', {
          minimum: 1,
          maximum: BOUNDS.maxIdleTimeoutSeconds,
        }),
        invocationTimeoutSeconds: int32('Timeout of one invocation.', {
          minimum: 1,
          maximum: BOUNDS.maxInvocationTimeoutSeconds,
          default: DEFAULTS.invocationTimeoutSeconds,
        }),
      },
      { required: ['handler'] },
    ),
  },
  {
    'x-kubernetes-validations': [
      { rule: 'has(self.task) != has(self.function)', message: 'exactly one of mode.task and mode.function must be set' },
    ],
  },
);

const artifactId = string('Artifact ID: the last segment of its object key.', {
  pattern: ARTIFACT_ID_PATTERN,
  maxLength: BOUNDS.artifactIdBytes,
});
/** A declared artifact's ID: IDs starting with `krt.` are the platform's (the checkpoint). */
const declaredArtifactId: JsonSchema = {
  ...artifactId,
  'x-kubernetes-validations': [
    {
      rule: `!self.startsWith('${RESERVED_ARTIFACT_ID_PREFIX}')`,
      message: `artifact IDs starting with ${RESERVED_ARTIFACT_ID_PREFIX} are reserved for the platform (${CHECKPOINT_ARTIFACT_ID})`,
    },
  ],
};
const digest = string('sha256:<64 hex> of its bytes.', { pattern: ARTIFACT_DIGEST_PATTERN, maxLength: 71 });
const checkpoint = object(
  'A checkpoint object: the artifact krt.checkpoint of the attempt that stored it, verified in the store by runtimed.',
  {
    attempt: int32('The attempt that stored it.', { minimum: 1 }),
    digest,
    size: integer('Size in bytes.', { minimum: 0, maximum: BOUNDS.checkpointBytes }),
  },
  { required: ['attempt', 'digest', 'size'] },
);
const responseId = string('Caller-chosen response ID.', { pattern: RESPONSE_ID_PATTERN, maxLength: 128 });
const runInputName = string('Name of the RunInput.', { pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: BOUNDS.dnsSubdomainBytes });
const mediaType = string('Media type, e.g. text/csv.', { pattern: MEDIA_TYPE_PATTERN, maxLength: BOUNDS.mediaTypeBytes });

const artifacts = object(
  'Task Runs only: the files the task uploads (through krt.artifacts.put or krt-artifact) and the ArtifactStore they go to. The Run succeeds only once every required one is verified in the store.',
  {
    store: string('Name of an ArtifactStore in the Run namespace.', {
      pattern: DNS1123_SUBDOMAIN_PATTERN,
      maxLength: BOUNDS.dnsSubdomainBytes,
    }),
    outputs: array(
      'Declared artifacts.',
      object(
        'One artifact.',
        {
          id: declaredArtifactId,
          maxBytes: integer('Upper bound of its size; a grant for more is refused.', { minimum: 0, maximum: BOUNDS.artifactMaxBytes }),
          mediaType,
          optional: boolean('It may be missing; a required one missing fails the Run.', { default: false }),
        },
        { required: ['id', 'maxBytes', 'mediaType'] },
      ),
      { minItems: 1, maxItems: BOUNDS.artifactCount, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['id'] },
    ),
  },
  { required: ['store', 'outputs'] },
);

/** The fields a Run shares with a RunSchedule's runTemplate (what to run, not its lifecycle requests). */
const templatedSpecProperties: Record<string, JsonSchema> = {
  runtime: string('Name of the Runtime in this namespace.', { pattern: DNS1123_LABEL_PATTERN, maxLength: BOUNDS.dnsLabelBytes }),
  source,
  mode,
  env: array(
    'Environment variables of the program.',
    object(
      'One variable.',
      {
        name: string('Variable name.', { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 }),
        value: string('Value.', { maxLength: BOUNDS.envValueBytes }),
      },
      { required: ['name', 'value'] },
    ),
    { maxItems: BOUNDS.envCount, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
  ),
  timeout: string('Maximum lifetime from status.startTime, e.g. 90s, 10m, 1h30m.', {
    pattern: DURATION_PATTERN,
    minLength: 2,
    maxLength: 24,
  }),
  retryPolicy: object('Retries of failed attempts.', {
    // No schema default: it depends on retrySafe and the mode, which a default cannot see.
    maxAttempts: int32(
      `Attempts in all, counting the first. Default ${DEFAULTS.maxAttempts} for a function or a retrySafe task; a task that is not retrySafe runs once.`,
      { minimum: 1, maximum: BOUNDS.maxAttempts },
    ),
    initialBackoffSeconds: int32('Backoff before the second attempt; doubles each attempt.', {
      minimum: 0,
      maximum: BOUNDS.maxBackoffSeconds,
      default: DEFAULTS.initialBackoffSeconds,
    }),
    maxBackoffSeconds: int32('Upper bound of the backoff.', {
      minimum: 0,
      maximum: BOUNDS.maxBackoffSeconds,
      default: DEFAULTS.maxBackoffSeconds,
    }),
    retrySafe: boolean(
      'The task may run again after its owner was lost without proof of what it did. Function registration is always retried.',
      { default: false },
    ),
  }),
  ttlSecondsAfterFinished: integer('Delete the Run this long after it finished. Mutable.', { minimum: 0 }),
  artifacts,
};

const RUN_SPEC_REQUIRED = ['runtime', 'source', 'mode'] as const;

/** A task that is not retry-safe runs once: a second run could repeat side effects nobody can undo. */
const retryNeedsRetrySafe = {
  rule: '!has(self.mode.task) || !has(self.retryPolicy) || !has(self.retryPolicy.maxAttempts) || self.retryPolicy.maxAttempts <= 1 || (has(self.retryPolicy.retrySafe) && self.retryPolicy.retrySafe)',
  message: 'spec.retryPolicy.maxAttempts > 1 needs retryPolicy.retrySafe: true: a task that is not retry-safe runs once',
  fieldPath: '.retryPolicy.maxAttempts',
  reason: 'FieldValueForbidden',
} as const;

const artifactsNeedTask = {
  rule: '!has(self.artifacts) || has(self.mode.task)',
  message: 'spec.artifacts is for task Runs only',
  fieldPath: '.artifacts',
  reason: 'FieldValueForbidden',
} as const;

/** A Run spec as a RunSchedule's runTemplate holds it: mutable, without cancelRequested and parentRunRef. */
export function runTemplateSpecSchema(): JsonSchema {
  return object('The spec of every Run created (a Run spec without cancelRequested and parentRunRef).', templatedSpecProperties, {
    required: RUN_SPEC_REQUIRED,
    'x-kubernetes-validations': [retryNeedsRetrySafe, artifactsNeedTask],
  });
}

// ---------------------------------------------------------------------------- spec.origin

const localResult = object(
  'What the local run ended with (the status fields of a terminal task).',
  {
    phase: string('Terminal phase of the local run.', { enum: LOCAL_RESULT_PHASES }),
    reason: string('CamelCase reason, as runtimed writes it for a task.', { maxLength: 128 }),
    message: string('Bounded human-readable detail.', { maxLength: BOUNDS.messageBytes }),
    exitCode: int32('Exit code of the local execution.'),
    outputs: {
      type: 'object',
      description: 'Bounded task outputs.',
      maxProperties: BOUNDS.outputCount,
      additionalProperties: string('An output value.', { maxLength: BOUNDS.outputValueBytes }),
    },
    artifacts: array(
      'Artifacts uploaded to the Run store by krt sync (verified digests).',
      object(
        'One artifact.',
        {
          id: artifactId,
          digest: string('sha256:<64 hex> of its bytes.', { pattern: ARTIFACT_DIGEST_PATTERN, maxLength: 71 }),
          size: integer('Size in bytes.', { minimum: 0, maximum: BOUNDS.artifactMaxBytes }),
          mediaType,
        },
        { required: ['id', 'digest', 'size', 'mediaType'] },
      ),
      { maxItems: BOUNDS.artifactCount, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['id'] },
    ),
    startTime: dateTime('When the local execution started.'),
    completionTime: dateTime('When it ended.'),
  },
  { required: ['phase', 'reason', 'message', 'startTime', 'completionTime'] },
);

const origin = object(
  'Where the Run was executed when not by the platform. A Run with an origin is never scheduled: the controller-manager records its result. Immutable.',
  {
    local: object(
      'Executed by `krt run --local` and uploaded by `krt sync`.',
      {
        runId: string('The local run ID (.krt/runs/<id>).', { pattern: LOCAL_RUN_ID_PATTERN, maxLength: 32 }),
        lockDigest: string('sha256:<64 hex> of the lock that pinned the source and inputs.', {
          pattern: ARTIFACT_DIGEST_PATTERN,
          maxLength: 71,
        }),
        result: localResult,
      },
      { required: ['runId', 'lockDigest', 'result'] },
    ),
  },
  { required: ['local'] },
);

/** Bounds of spec.creator: generous for real identities, small enough for CEL's cost estimate of the immutability rule. */
const CREATOR_NAME_BYTES = 512;
const CREATOR_GROUPS = 256;

const creator = object(
  'Who created the Run: stamped at create by the MutatingAdmissionPolicy kruntimes.io-run-creator from the request (whatever the client sent). Immutable. The scheduler asks again at assignment whether this user may use the Runtime.',
  {
    username: string('The creating user, as the API server authenticated it.', { maxLength: CREATOR_NAME_BYTES }),
    groups: array('Their groups at create.', string('A group.', { maxLength: CREATOR_NAME_BYTES }), { maxItems: CREATOR_GROUPS }),
  },
  { required: ['username'] },
);

const originNeedsTask = {
  rule: '!has(self.origin) || has(self.mode.task)',
  message: 'spec.origin is for task Runs only',
  fieldPath: '.origin',
  reason: 'FieldValueForbidden',
} as const;

// ----------------------------------------------------------------------------

const spec = object(
  'What to run. Immutable after create except cancelRequested (false to true only) and ttlSecondsAfterFinished.',
  {
    ...templatedSpecProperties,
    origin,
    creator,
    cancelRequested: boolean('Request cancellation. May only change from false to true.', { default: false }),
    parentRunRef: object(
      'The finished Run this Run retries.',
      {
        name: string('Name of the parent Run.', { pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: BOUNDS.dnsSubdomainBytes }),
        uid: string('UID of the parent Run.', { maxLength: 36 }),
      },
      { required: ['name', 'uid'] },
    ),
  },
  {
    required: RUN_SPEC_REQUIRED,
    'x-kubernetes-validations': [
      immutableRequired('runtime'),
      immutableRequired('source'),
      immutableRequired('mode'),
      immutableOptional('env'),
      immutableOptional('timeout'),
      immutableOptional('retryPolicy'),
      immutableOptional('parentRunRef'),
      immutableOptional('artifacts'),
      immutableOptional('origin'),
      immutableOptional('creator'),
      retryNeedsRetrySafe,
      artifactsNeedTask,
      originNeedsTask,
      {
        rule: '!has(oldSelf.cancelRequested) || !oldSelf.cancelRequested || (has(self.cancelRequested) && self.cancelRequested)',
        message: 'spec.cancelRequested may only change from false to true',
        fieldPath: '.cancelRequested',
        reason: 'FieldValueForbidden',
      },
    ],
  },
);

const status = object(
  'Observed state, written only by the scheduler, the owning runtimed, stale-recovery and the controller-manager (waiting input).',
  {
    observedGeneration: integer('metadata.generation last acted on.', { minimum: 0 }),
    phase: string('Lifecycle phase.', { enum: RUN_PHASES }),
    mode: string('task or function, copied from spec for printing.', { enum: ['task', 'function'] }),
    conditions: conditionsSchema,
    attempt: int32('Attempt number, counting from 1. Never decreases.', { minimum: 0 }),
    assignedPod: string('Runtime Pod that owns the current attempt.', {
      pattern: DNS1123_SUBDOMAIN_PATTERN,
      maxLength: BOUNDS.dnsSubdomainBytes,
    }),
    assignedPodUID: string('UID of assignedPod; set and cleared with it.', { minLength: 1, maxLength: 36 }),
    endpoint: object(
      'Where a Ready function is invoked. Stable across recovery: check phase or the Ready condition, not its presence.',
      {
        protocol: string('Invoke protocol.', { enum: ENDPOINT_PROTOCOLS }),
        url: string('Invoke URL.', { minLength: 1, maxLength: BOUNDS.endpointUrlBytes }),
        caBundle: string('PEM trust bundle of the gateway, base64.', {
          format: 'byte',
          // Bounds the rule's cost; its padding lets up to 2 bytes past the bound through.
          maxLength: caBundleBase64Length,
          'x-kubernetes-validations': [
            {
              // CEL sees a `format: byte` string as its decoded bytes.
              rule: `size(self) <= ${String(BOUNDS.caBundleBytes)}`,
              message: `caBundle holds at most ${String(BOUNDS.caBundleBytes)} bytes of PEM`,
            },
          ],
        }),
      },
      { required: ['protocol', 'url'] },
    ),
    startTime: dateTime('When runtimed first claimed the Run.'),
    completionTime: dateTime('When the Run reached a terminal phase.'),
    notBefore: dateTime('The next attempt is not scheduled before this time (retry backoff).'),
    plannedMoves: int32(
      'Attempts that ended because their Pod was told to stop and handed the Run over (a drain): planned moves, not counted against maxAttempts. Never decreases.',
      { minimum: 0, maximum: 1_000_000 },
    ),
    reason: string('CamelCase reason of the current phase.', { maxLength: 128 }),
    message: string('Bounded human-readable detail. Never program output.', { maxLength: BOUNDS.messageBytes }),
    exitCode: int32('Exit code of the last task attempt.'),
    reportSequence: integer("Number of the owner's last report of the current attempt; never decreases within an attempt.", {
      minimum: 1,
    }),
    artifacts: array(
      'Artifacts of the succeeded attempt, each verified in the store (exists, size, digest). No URLs: `krt artifacts` downloads them.',
      object(
        'One verified artifact.',
        {
          id: artifactId,
          digest,
          size: integer('Size in bytes.', { minimum: 0, maximum: BOUNDS.artifactMaxBytes }),
          mediaType,
        },
        { required: ['id', 'digest', 'size', 'mediaType'] },
      ),
      { maxItems: BOUNDS.artifactCount, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['id'] },
    ),
    waitingInput: object(
      'Set while the Run is WaitingInput: what a response must satisfy, and the checkpoint the continuation starts from.',
      {
        schema: string('The JSON Schema (JSON text) a RunInput data must satisfy.', { maxLength: BOUNDS.inputSchemaBytes }),
        checkpoint,
        since: dateTime('When the Run started waiting.'),
      },
      { required: ['schema', 'checkpoint', 'since'] },
    ),
    resume: object(
      'What the current continuation starts from: the checkpoint and the accepted response. Kept for its retries.',
      {
        checkpoint,
        responseId,
        runInput: runInputName,
        input: string('The response data as JSON text.', { maxLength: BOUNDS.inputDataBytes }),
        attempt: int32('The first attempt of this continuation; its retries count from here.', { minimum: 1 }),
      },
      { required: ['checkpoint', 'responseId', 'runInput', 'input', 'attempt'] },
    ),
    source: object(
      'The execution snapshot of spec.source, resolved once before the first binding; every attempt runs it (runtimed checks the digest).',
      {
        digest,
        size: integer('Size of the source in bytes.', { minimum: 0, maximum: BOUNDS.inlineSourceBytes }),
        configMapName: string('The immutable ConfigMap (key `source`) holding the copy of a configMapKeyRef source; absent for inline.', {
          pattern: DNS1123_SUBDOMAIN_PATTERN,
          maxLength: BOUNDS.dnsSubdomainBytes,
        }),
      },
      { required: ['digest', 'size'] },
    ),
    responses: array(
      'The latest accepted responses: a response ID listed here continues nothing again.',
      object(
        'One accepted response.',
        {
          responseId,
          runInput: runInputName,
          attempt: int32('The continuation attempt it started.', { minimum: 1 }),
          time: dateTime('When it was accepted.'),
        },
        { required: ['responseId', 'runInput', 'attempt', 'time'] },
      ),
      { maxItems: BOUNDS.responsesKept, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['responseId'] },
    ),
    outputs: {
      type: 'object',
      description: 'Bounded task outputs.',
      maxProperties: BOUNDS.outputCount,
      additionalProperties: string('An output value.', { maxLength: BOUNDS.outputValueBytes }),
      'x-kubernetes-validations': [
        {
          rule: `self.all(k, k.size() <= ${BOUNDS.outputKeyBytes} && k.matches('${OUTPUT_KEY_PATTERN}'))`,
          message: `output keys must match ${OUTPUT_KEY_PATTERN} and be at most ${BOUNDS.outputKeyBytes} bytes`,
        },
      ],
    },
  },
  {
    'x-kubernetes-validations': [
      {
        rule: "!has(self.phase) || self.phase != 'WaitingInput' || (has(self.waitingInput) && !has(self.assignedPod))",
        message: 'a WaitingInput Run records status.waitingInput and holds no Pod',
        fieldPath: '.waitingInput',
      },
      {
        rule: '!has(oldSelf.source) || (has(self.source) && self.source == oldSelf.source)',
        message: 'status.source (the execution snapshot) is set once and never changed',
        fieldPath: '.source',
      },
      {
        rule: 'has(self.assignedPod) == has(self.assignedPodUID)',
        message: 'status.assignedPod and status.assignedPodUID are set and cleared together',
      },
      {
        rule: '!has(oldSelf.attempt) || (has(self.attempt) && self.attempt >= oldSelf.attempt)',
        message: 'status.attempt may not decrease',
        fieldPath: '.attempt',
      },
      {
        rule: '!has(oldSelf.plannedMoves) || (has(self.plannedMoves) && self.plannedMoves >= oldSelf.plannedMoves)',
        message: 'status.plannedMoves may not decrease',
        fieldPath: '.plannedMoves',
      },
      {
        // Every writer keeps the field; only a new attempt clears it.
        rule: '!has(oldSelf.reportSequence) || (has(self.attempt) && has(oldSelf.attempt) && self.attempt != oldSelf.attempt) || (has(self.reportSequence) && self.reportSequence >= oldSelf.reportSequence)',
        message: 'status.reportSequence may not decrease within an attempt: an older report cannot overwrite a newer one',
        fieldPath: '.reportSequence',
      },
      {
        rule: `!has(oldSelf.phase) || !(oldSelf.phase in ${celStringList(TERMINAL_PHASES)}) || (has(self.phase) && self.phase == oldSelf.phase)`,
        message: 'a terminal phase never changes',
        fieldPath: '.phase',
      },
    ],
  },
);

export function runCrd(): CustomResourceDefinition {
  return namespacedCrd({
    kind: RUN_KIND,
    plural: RUN_PLURAL,
    singular: RUN_SINGULAR,
    shortNames: RUN_SHORT_NAMES,
    description: 'A unit of work on a Runtime: a task run once, or a function invoked many times.',
    spec,
    status,
    validations: [
      {
        // Cancel wins over a late success: once spec.cancelRequested is stored, no writer may
        // make the Run Succeeded (runtimed's transition writes Cancelled instead).
        rule: "!has(self.status) || !has(self.status.phase) || self.status.phase != 'Succeeded' || !has(self.spec.cancelRequested) || !self.spec.cancelRequested || (has(oldSelf.status) && has(oldSelf.status.phase) && oldSelf.status.phase == 'Succeeded')",
        message: 'a Run whose cancel was requested cannot become Succeeded: it ends Cancelled',
        fieldPath: '.status.phase',
      },
    ],
    // runtimed watches only its own Runtime's Runs: the API server filters, not each Pod.
    selectableFields: [`.${RUN_RUNTIME_FIELD}`],
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      // In the default view: it shows what an active Run waits for, e.g. Cancelling.
      { name: 'Reason', type: 'string', jsonPath: '.status.reason' },
      { name: 'Mode', type: 'string', jsonPath: '.status.mode' },
      { name: 'Runtime', type: 'string', jsonPath: '.spec.runtime' },
      { name: 'Pod', type: 'string', jsonPath: '.status.assignedPod' },
      { name: 'Attempt', type: 'integer', jsonPath: '.status.attempt' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoint.url', priority: 1 },
      { name: 'Source', type: 'string', jsonPath: '.status.source.digest', priority: 1 },
    ],
  });
}

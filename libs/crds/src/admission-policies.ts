import { stringify } from 'yaml';
import {
  ADMISSION_POLICY_NAMES,
  API_GROUP,
  API_VERSION,
  ORIGIN_LABEL,
  RUN_PLURAL,
  RUN_SCHEDULE_PLURAL,
  RUNTIME_PLURAL,
  RUNTIME_USE_VERB,
} from '@kruntimes/api';

/**
 * The admission policies of kruntimes, in-process CEL in the API server (no webhook to
 * run): who created a Run is stamped on it, and creating a Run (or a RunSchedule, whose
 * Runs the controller-manager creates) needs the verb `use` on the named Runtime. The
 * chart installs these very files (templates/admission-policies.yaml) and so does the
 * test control plane (libs/testing), so tests run against what ships.
 */
export interface AdmissionObject {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'MutatingAdmissionPolicy' | 'MutatingAdmissionPolicyBinding' | 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding';
  metadata: { name: string };
  spec: Record<string, unknown>;
}

const ADMISSION_API = 'admissionregistration.k8s.io/v1' as const;

/** `authorizer` asking for `use` on the Runtime named by `runtimeExpression`, in the request's namespace. */
function useCheck(runtimeExpression: string): string {
  return `authorizer.group('${API_GROUP}').resource('${RUNTIME_PLURAL}').namespace(request.namespace).name(${runtimeExpression}).check('${RUNTIME_USE_VERB}').allowed()`;
}

function useMessage(what: string, runtimeExpression: string): string {
  return (
    `'user ' + request.userInfo.username + ' may not ${what}: it names Runtime ' + request.namespace + '/' + ${runtimeExpression} + ` +
    `', and that needs the verb ${RUNTIME_USE_VERB} on ${RUNTIME_PLURAL}.${API_GROUP} (granted by the ClusterRole kruntimes-runtime-user, aggregated to edit and admin)'`
  );
}

/** Stamps `spec.creator` from the request at create, replacing whatever the client sent. */
export function runCreatorPolicy(): AdmissionObject {
  return {
    apiVersion: ADMISSION_API,
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: ADMISSION_POLICY_NAMES.runCreator },
    spec: {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: {
        resourceRules: [{ apiGroups: [API_GROUP], apiVersions: [API_VERSION], operations: ['CREATE'], resources: [RUN_PLURAL] }],
      },
      mutations: [
        {
          patchType: 'JSONPatch',
          jsonPatch: {
            // Two operations, so that each value has one CEL type: the first replaces a creator
            // the client may have sent, the second adds the groups (none for some users).
            expression: [
              '[',
              "  JSONPatch{op: 'add', path: '/spec/creator', value: {'username': request.userInfo.username}},",
              "  JSONPatch{op: 'add', path: '/spec/creator/groups', value: has(request.userInfo.groups) ? request.userInfo.groups : []}",
              ']',
            ].join('\n'),
          },
        },
      ],
    },
  };
}

/** `object` (or `oldObject`) carries the origin label of a local Run. */
function originLabelled(object: 'object' | 'oldObject'): string {
  return `(has(${object}.metadata.labels) && '${ORIGIN_LABEL}' in ${object}.metadata.labels && ${object}.metadata.labels['${ORIGIN_LABEL}'] == 'local')`;
}

/**
 * At create: `use` on the Runtime, and spec.creator as stamped. On update: spec.creator
 * never changes. A Run with spec.origin carries the label the origin controller selects
 * on (CEL on the CRD sees no labels), or it would stay Pending forever; an update of a
 * Run that never had it (made before this rule) is let through.
 */
export function runAdmissionPolicy(): AdmissionObject {
  return {
    apiVersion: ADMISSION_API,
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: ADMISSION_POLICY_NAMES.runAdmission },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [API_GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [RUN_PLURAL] }],
      },
      validations: [
        {
          expression: `request.operation != 'CREATE' || ${useCheck('object.spec.runtime')}`,
          messageExpression: useMessage('create this Run', 'object.spec.runtime'),
          reason: 'Forbidden',
        },
        {
          // The mutating policy ran first: anything else means it is not installed, or someone forged it.
          expression:
            "request.operation != 'CREATE' || (has(object.spec.creator) && object.spec.creator.username == request.userInfo.username)",
          message: `spec.creator is set by the platform at create (MutatingAdmissionPolicy ${ADMISSION_POLICY_NAMES.runCreator}); it cannot be given`,
          reason: 'Forbidden',
        },
        {
          expression:
            "request.operation != 'UPDATE' || (has(object.spec.creator) == has(oldObject.spec.creator) && (!has(object.spec.creator) || object.spec.creator == oldObject.spec.creator))",
          message: 'spec.creator is immutable',
          reason: 'Forbidden',
        },
        {
          expression: `!has(object.spec.origin) || ${originLabelled('object')} || (request.operation == 'UPDATE' && !${originLabelled('oldObject')})`,
          message: `a Run with spec.origin (synced by krt sync) carries the label ${ORIGIN_LABEL}=local, which its controller selects on; it cannot be removed or changed`,
          reason: 'Invalid',
        },
      ],
    },
  };
}

/**
 * The controller-manager creates a RunSchedule's Runs as itself (it may `use` every
 * Runtime), so the right is checked where the user acts: creating or changing the
 * RunSchedule needs `use` on the Runtime its template names.
 */
export function runScheduleAdmissionPolicy(): AdmissionObject {
  const runtime = 'object.spec.runTemplate.spec.runtime';
  return {
    apiVersion: ADMISSION_API,
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: ADMISSION_POLICY_NAMES.runScheduleAdmission },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [API_GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [RUN_SCHEDULE_PLURAL] }],
      },
      validations: [
        {
          // An update that keeps the Runtime (e.g. suspend) needs no new check.
          expression: `(request.operation == 'UPDATE' && ${runtime} == oldObject.spec.runTemplate.spec.runtime) || ${useCheck(runtime)}`,
          messageExpression: useMessage('create or change this RunSchedule', runtime),
          reason: 'Forbidden',
        },
      ],
    },
  };
}

function binding(policy: AdmissionObject): AdmissionObject {
  const mutating = policy.kind === 'MutatingAdmissionPolicy';
  return {
    apiVersion: ADMISSION_API,
    kind: mutating ? 'MutatingAdmissionPolicyBinding' : 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policy.metadata.name },
    spec: mutating ? { policyName: policy.metadata.name } : { policyName: policy.metadata.name, validationActions: ['Deny'] },
  };
}

/** Every policy and its binding, in the order they are applied. */
export function admissionObjects(): AdmissionObject[] {
  return [runCreatorPolicy(), runAdmissionPolicy(), runScheduleAdmissionPolicy()].flatMap((policy) => [policy, binding(policy)]);
}

/** Chart-relative folder of the generated policy YAML (one file, read by the chart's template and by libs/testing). */
export const ADMISSION_OUTPUT_DIR = 'deploy/charts/kruntimes/admission';
export const ADMISSION_FILE_NAME = 'policies.yaml';

export function renderAdmissionYaml(): string {
  const header = '# Code generated by `nx run crds:generate` from libs/crds/src/admission-policies.ts. DO NOT EDIT.\n';
  return (
    header +
    admissionObjects()
      .map((object) => `---\n${stringify(object, { lineWidth: 0, aliasDuplicateObjects: false })}`)
      .join('')
  );
}

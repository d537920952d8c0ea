import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMISSION_POLICY_NAMES } from '@kruntimes/api';
import { ADMISSION_FILE_NAME, ADMISSION_OUTPUT_DIR, admissionObjects, renderAdmissionYaml } from './admission-policies.ts';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');

describe('admission policies', () => {
  it(`${ADMISSION_OUTPUT_DIR}/${ADMISSION_FILE_NAME} is fresh (run \`npx nx run crds:generate\`)`, () => {
    expect(readFileSync(join(workspaceRoot, ADMISSION_OUTPUT_DIR, ADMISSION_FILE_NAME), 'utf8')).toBe(renderAdmissionYaml());
  });

  it('binds every policy by its own name, validating ones with Deny', () => {
    const objects = admissionObjects();
    expect(objects.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual([
      `MutatingAdmissionPolicy ${ADMISSION_POLICY_NAMES.runCreator}`,
      `MutatingAdmissionPolicyBinding ${ADMISSION_POLICY_NAMES.runCreator}`,
      `ValidatingAdmissionPolicy ${ADMISSION_POLICY_NAMES.runAdmission}`,
      `ValidatingAdmissionPolicyBinding ${ADMISSION_POLICY_NAMES.runAdmission}`,
      `ValidatingAdmissionPolicy ${ADMISSION_POLICY_NAMES.runScheduleAdmission}`,
      `ValidatingAdmissionPolicyBinding ${ADMISSION_POLICY_NAMES.runScheduleAdmission}`,
    ]);
    for (const object of objects.filter((o) => o.kind.endsWith('Binding'))) {
      expect(object.spec.policyName).toBe(object.metadata.name);
      if (object.kind === 'ValidatingAdmissionPolicyBinding') expect(object.spec.validationActions).toEqual(['Deny']);
    }
    // A policy that cannot be evaluated refuses rather than lets a Run through unchecked.
    for (const object of objects.filter((o) => !o.kind.endsWith('Binding'))) expect(object.spec.failurePolicy).toBe('Fail');
  });
});

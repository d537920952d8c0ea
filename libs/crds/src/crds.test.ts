import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { BOUNDS, RUN_PHASES } from '@kruntimes/api';
import { TERMINAL_PHASES } from '@kruntimes/run-state';
import { CRD_OUTPUT_DIR, allCrds, crdFileName, renderCrdYaml } from './index.ts';
import type { CelRule, CustomResourceDefinition, JsonSchema } from './index.ts';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');

function committedYaml(crd: CustomResourceDefinition): string {
  return readFileSync(join(workspaceRoot, CRD_OUTPUT_DIR, crdFileName(crd)), 'utf8');
}

describe('generated CRD YAML', () => {
  it.each(allCrds().map((crd) => [crd.metadata.name, crd] as const))('%s is fresh (run `npx nx run crds:generate`)', (_name, crd) => {
    expect(committedYaml(crd)).toBe(renderCrdYaml(crd));
  });
});

/** The Run CRD as committed, read back from YAML: what the API server will get. */
function committedRunSchema(): JsonSchema {
  const crd = parse(committedYaml(allCrds()[0]!)) as CustomResourceDefinition;
  expect(crd.metadata.name).toBe('runs.kruntimes.io');
  return crd.spec.versions[0]!.schema.openAPIV3Schema;
}

function rulesOf(schema: JsonSchema | undefined): readonly CelRule[] {
  return schema?.['x-kubernetes-validations'] ?? [];
}

describe('Run CRD (read from the committed YAML)', () => {
  const schema = committedRunSchema();
  const spec = schema.properties?.spec;
  const status = schema.properties?.status;

  it.each(['runtime', 'source', 'mode', 'env', 'timeout', 'retryPolicy', 'parentRunRef', 'origin'])('spec.%s is immutable', (field) => {
    const rule = rulesOf(spec).find((r) => r.message === `spec.${field} is immutable`);
    expect(rule?.rule).toContain(`oldSelf.${field}`);
    expect(rule?.fieldPath).toBe(`.${field}`);
  });

  it('cancelRequested may only go from false to true; ttlSecondsAfterFinished stays mutable', () => {
    const rules = rulesOf(spec);
    expect(rules.some((r) => r.fieldPath === '.cancelRequested' && r.rule.includes('oldSelf.cancelRequested'))).toBe(true);
    expect(rules.some((r) => r.rule.includes('ttlSecondsAfterFinished'))).toBe(false);
  });

  it('mode and source each take exactly one member', () => {
    expect(rulesOf(spec?.properties?.mode).map((r) => r.rule)).toEqual(['has(self.task) != has(self.function)']);
    expect(rulesOf(spec?.properties?.source).map((r) => r.rule)).toEqual(['has(self.inline) != has(self.configMapKeyRef)']);
  });

  it('assignment fields go together, attempt never decreases, terminal phases never change', () => {
    const rules = rulesOf(status).map((r) => r.rule);
    expect(rules).toContain('has(self.assignedPod) == has(self.assignedPodUID)');
    expect(rules).toContain('!has(oldSelf.attempt) || (has(self.attempt) && self.attempt >= oldSelf.attempt)');
    const terminalRule = rules.find((r) => r.includes('oldSelf.phase in'));
    for (const phase of RUN_PHASES) {
      expect(terminalRule?.includes(`'${phase}'`)).toBe(TERMINAL_PHASES.includes(phase));
    }
  });

  it('carries the bounds', () => {
    const endpoint = status?.properties?.endpoint?.properties;
    expect(endpoint?.url?.maxLength).toBe(BOUNDS.endpointUrlBytes);
    expect(endpoint?.caBundle?.maxLength).toBeGreaterThanOrEqual((BOUNDS.caBundleBytes / 3) * 4);
    expect(status?.properties?.message?.maxLength).toBe(BOUNDS.messageBytes);
    expect(status?.properties?.outputs?.maxProperties).toBe(BOUNDS.outputCount);
    expect(spec?.properties?.source?.properties?.inline?.maxLength).toBe(BOUNDS.inlineSourceBytes);
    expect(spec?.properties?.retryPolicy?.properties?.maxAttempts?.maximum).toBe(BOUNDS.maxAttempts);
    // No schema default: a task that is not retrySafe defaults to one attempt, others to three.
    expect(spec?.properties?.retryPolicy?.properties?.maxAttempts?.default).toBeUndefined();
    expect(rulesOf(spec).map((r) => r.message)).toContain(
      'spec.retryPolicy.maxAttempts > 1 needs retryPolicy.retrySafe: true: a task that is not retry-safe runs once',
    );
    expect(status?.properties?.phase?.enum).toEqual(RUN_PHASES);
  });

  it('has the printer columns kubectl users expect', () => {
    const crd = parse(committedYaml(allCrds()[0]!)) as CustomResourceDefinition;
    const version = crd.spec.versions[0]!;
    expect(version.additionalPrinterColumns.filter((c) => c.priority === undefined).map((c) => c.name.toUpperCase())).toEqual([
      'PHASE',
      // Shows what an active Run is doing, e.g. Cancelling while its cancel is carried out.
      'REASON',
      'MODE',
      'RUNTIME',
      'POD',
      'ATTEMPT',
      'AGE',
    ]);
    expect(version.subresources.status).toEqual({});
    expect(crd.spec.names.shortNames.length).toBeGreaterThan(0);
  });

  it('refuses Succeeded once cancel was requested (a CEL rule on the whole object)', () => {
    const crd = parse(committedYaml(allCrds()[0]!)) as CustomResourceDefinition;
    const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
    expect(rulesOf(root).map((r) => r.message)).toEqual(['a Run whose cancel was requested cannot become Succeeded: it ends Cancelled']);
  });
});

describe('RunSchedule CRD (read from the committed YAML)', () => {
  const crd = parse(committedYaml(allCrds().find((c) => c.metadata.name === 'runschedules.kruntimes.io')!)) as CustomResourceDefinition;
  const version = crd.spec.versions[0]!;
  const schema = version.schema.openAPIV3Schema;
  const spec = schema.properties?.spec;

  it('has the printer columns of kubectl get cronjobs', () => {
    expect(version.additionalPrinterColumns.filter((c) => c.priority === undefined).map((c) => c.name.toUpperCase())).toEqual([
      'SCHEDULE',
      'TIMEZONE',
      'SUSPEND',
      'ACTIVE',
      'LAST SCHEDULE',
      'AGE',
    ]);
    expect(version.subresources.status).toEqual({});
  });

  it('checks the schedule shape, the zone name and its presence in the zone database with CEL', () => {
    expect(rulesOf(spec?.properties?.schedule).map((r) => r.message)).toEqual([expect.stringContaining('five cron fields')]);
    expect(rulesOf(spec?.properties?.timeZone).map((r) => r.rule)).toEqual([
      expect.stringContaining('self.matches('),
      "timestamp('2000-01-01T00:00:00Z').getHours(self) >= 0",
    ]);
    expect(rulesOf(schema).map((r) => r.rule)).toEqual(['self.metadata.name.size() <= 52']);
  });

  it('takes Skip or Queue, and a Run spec without cancelRequested or parentRunRef, with no immutability rules', () => {
    expect(spec?.properties?.overlapPolicy?.enum).toEqual(['Skip', 'Queue']);
    const template = spec?.properties?.runTemplate?.properties?.spec;
    expect(template?.required).toEqual(['runtime', 'source', 'mode']);
    expect(Object.keys(template?.properties ?? {})).not.toEqual(expect.arrayContaining(['cancelRequested']));
    expect(Object.keys(template?.properties ?? {})).not.toEqual(expect.arrayContaining(['parentRunRef']));
    // Only the rules every Run it creates must pass: a task that is not retrySafe runs once;
    // artifacts belong to tasks.
    expect(rulesOf(template).map((r) => r.message)).toEqual([
      expect.stringContaining('needs retryPolicy.retrySafe: true'),
      'spec.artifacts is for task Runs only',
    ]);
  });
});

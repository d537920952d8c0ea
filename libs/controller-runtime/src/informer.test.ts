import { stripManagedFields } from './informer.ts';

describe('stripManagedFields', () => {
  it('drops metadata.managedFields and keeps everything else', () => {
    const object = {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: {
        name: 'r',
        uid: 'u',
        resourceVersion: '7',
        managedFields: [{ manager: 'runtimed', operation: 'Update', fieldsV1: { 'f:status': {} } }],
      },
      spec: { runtime: 'py' },
    };
    expect(stripManagedFields(object)).toEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name: 'r', uid: 'u', resourceVersion: '7' },
      spec: { runtime: 'py' },
    });
  });

  it('leaves an object without managedFields (or without metadata) as it is', () => {
    expect(stripManagedFields({ metadata: { name: 'r' } })).toEqual({ metadata: { name: 'r' } });
    expect(stripManagedFields({ kind: 'Run' })).toEqual({ kind: 'Run' });
  });
});

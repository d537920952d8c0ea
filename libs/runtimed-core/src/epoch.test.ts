import type { Run } from '@kruntimes/api';
import { epochMismatch } from './epoch.ts';

const UID = '33333333-3333-4333-8333-333333333333';
const POD = '11111111-1111-4111-8111-111111111111';
const epoch = { namespace: 'ns', name: 'r', uid: UID, attempt: 2, podUID: POD };

function live(uid: string, attempt: number | undefined, podUID: string | undefined): Pick<Run, 'metadata' | 'status'> {
  return {
    metadata: { name: 'r', namespace: 'ns', uid },
    status: {
      ...(attempt === undefined ? {} : { attempt }),
      ...(podUID === undefined ? {} : { assignedPod: 'p', assignedPodUID: podUID }),
    },
  };
}

test.each([
  ['the same epoch', live(UID, 2, POD), undefined],
  [
    'a recreated Run of that name',
    live('44444444-4444-4444-8444-444444444444', 2, POD),
    'the name now holds Run 44444444-4444-4444-8444-444444444444',
  ],
  ['another Pod', live(UID, 2, '22222222-2222-4222-8222-222222222222'), 'assigned to Pod 22222222-2222-4222-8222-222222222222'],
  ['no assignment (requeued)', live(UID, 3, undefined), 'assigned to Pod (none)'],
  ['a later attempt on this Pod', live(UID, 3, POD), 'now at attempt 3'],
  ['an earlier attempt', live(UID, 1, POD), 'now at attempt 1'],
] as const)('epoch check: %s', (_name, run, expected) => {
  expect(epochMismatch(run, epoch)).toBe(expected);
});

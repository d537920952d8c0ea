import { RUN_INPUT_REASONS } from '@kruntimes/api';
import { isEventReason } from '@kruntimes/controller-runtime';
import { RESPONSE_EVENT_REASONS } from './run-input-reconciler.ts';

const refused = Object.values(RUN_INPUT_REASONS).map((reason) => `${RESPONSE_EVENT_REASONS.refusedPrefix}${reason}`);

test.each([RESPONSE_EVENT_REASONS.accepted, RESPONSE_EVENT_REASONS.duplicate, ...refused])(
  'the response Event reason %s is UpperCamelCase',
  (reason) => {
    expect(isEventReason(reason)).toBe(true);
  },
);

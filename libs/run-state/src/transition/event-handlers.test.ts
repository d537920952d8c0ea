import { RUN_PHASES } from '@kruntimes/api';
import { CONTROLLER_MANAGER_HANDLERS } from './controller-manager.ts';
import { EVENT_HANDLERS } from './event-handlers.ts';
import type { RunEventType, WriterRole } from './events.ts';
import type { EventHandlers } from './handler.ts';
import { LOCAL_ORIGIN_HANDLERS } from './local-origin.ts';
import { OWNER_HANDLERS } from './owner.ts';
import { TRANSITION_RULES, refusalByRules } from './rules.ts';
import { RUNTIMED_HANDLERS } from './runtimed.ts';
import { SCHEDULER_HANDLERS } from './scheduler.ts';
import { STALE_RECOVERY_HANDLERS } from './stale-recovery.ts';

const WRITERS: readonly WriterRole[] = ['scheduler', 'runtimed', 'stale-recovery', 'controller-manager'];
const EVENT_TYPES = Object.keys(TRANSITION_RULES) as RunEventType[];

/** Each writer's file and the writers the rules table allows for every event in it. */
const GROUPS: readonly [string, object, readonly WriterRole[]][] = [
  ['scheduler', SCHEDULER_HANDLERS, ['scheduler']],
  ['runtimed', RUNTIMED_HANDLERS, ['runtimed']],
  ['owner (runtimed or stale-recovery)', OWNER_HANDLERS, ['runtimed', 'stale-recovery']],
  ['stale-recovery', STALE_RECOVERY_HANDLERS, ['stale-recovery']],
  ['controller-manager', CONTROLLER_MANAGER_HANDLERS, ['controller-manager']],
  ['local origin', LOCAL_ORIGIN_HANDLERS, ['controller-manager']],
];

// @ts-expect-error A handler map without every event does not compile.
const _incomplete: EventHandlers = { ...SCHEDULER_HANDLERS, ...RUNTIMED_HANDLERS };

describe('the event handlers', () => {
  it('has a handler for every event of the rules table, and for nothing else', () => {
    expect(Object.keys(EVENT_HANDLERS).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) expect(typeof EVENT_HANDLERS[type]).toBe('function');
  });

  it('places every event in exactly one writer group', () => {
    const grouped = GROUPS.flatMap(([, handlers]) => Object.keys(handlers));
    expect(grouped.sort()).toEqual([...EVENT_TYPES].sort());
  });

  it.each(GROUPS)('groups under %s only the events the rules table gives those writers', (_name, handlers, writers) => {
    for (const type of Object.keys(handlers) as RunEventType[]) {
      expect({ type, writers: [...TRANSITION_RULES[type].writers].sort() }).toEqual({ type, writers: [...writers].sort() });
    }
  });

  it('the rules table lets exactly its (writer, event, phase) triples through to a handler', () => {
    for (const type of EVENT_TYPES) {
      const rule = TRANSITION_RULES[type];
      for (const writer of WRITERS) {
        for (const phase of RUN_PHASES) {
          const allowed = rule.writers.includes(writer) && rule.from.includes(phase);
          expect({ type, writer, phase, allowed: refusalByRules(type, writer, phase) === undefined }).toEqual({
            type,
            writer,
            phase,
            allowed,
          });
        }
      }
    }
  });
});

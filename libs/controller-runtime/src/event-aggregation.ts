/** The object an Event is about (core/v1 `involvedObject`). */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
}

export type EventType = 'Normal' | 'Warning';

/** One occurrence to record: what happened to which object. */
export interface EventOccurrence<Reason extends string = string> {
  regarding: InvolvedObject;
  type: EventType;
  /** UpperCamelCase, from the service's table of reasons. */
  reason: Reason;
  message: string;
}

/** What the recorder remembers of an Event it wrote: enough to count a repeat into it. */
export interface SeenEvent {
  name: string;
  count: number;
  lastMs: number;
}

export type EventWrite = { action: 'create' } | { action: 'patch'; name: string; count: number };

/**
 * Whether an occurrence is a new Event or a repeat, as client-go's EventCorrelator decides:
 * a repeat (same object, type, reason, message: `eventKey`) within `windowMs` of its last
 * occurrence moves the count and the last timestamp of its Event instead of adding one.
 */
export function decideEventWrite(seen: SeenEvent | undefined, nowMs: number, windowMs: number): EventWrite {
  if (seen === undefined || nowMs - seen.lastMs >= windowMs) return { action: 'create' };
  return { action: 'patch', name: seen.name, count: seen.count + 1 };
}

/** The identity of a repeat: the object (with its UID: a new object of the same name is another), type, reason, message. */
export function eventKey(occurrence: EventOccurrence): string {
  const { regarding, type, reason, message } = occurrence;
  return JSON.stringify([regarding.apiVersion, regarding.kind, regarding.namespace, regarding.name, regarding.uid, type, reason, message]);
}

/** The key of the minimum interval: the object and the reason, whatever the message. */
export function intervalKey(occurrence: EventOccurrence): string {
  const { regarding, reason } = occurrence;
  return JSON.stringify([regarding.apiVersion, regarding.kind, regarding.namespace, regarding.name, regarding.uid, reason]);
}

/** UpperCamelCase, as Kubernetes asks of an Event's reason (`kubectl get events` columns, field selectors). */
export function isEventReason(reason: string): boolean {
  return /^[A-Z][A-Za-z0-9]*$/.test(reason) && reason.length <= 128;
}

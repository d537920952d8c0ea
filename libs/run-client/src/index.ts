export { ObjectClient } from './object-client.ts';
export { kruntimesClients, runClient } from './clients.ts';
export type { KruntimesClients } from './clients.ts';
export { apiStatus, isConflict, isDefiniteRefusal, isNotFound } from './refusal.ts';
export type { Refused, WriteResult } from './refusal.ts';
export { fencedWrite } from './fenced-write.ts';
export type { FencedResult, FencedStep } from './fenced-write.ts';
export { writeTransition } from './write-transition.ts';

export { ObjectClient } from './object-client.ts';
export type { MergePatch } from './object-client.ts';
export { kruntimesClients, runClient } from './clients.ts';
export type { KruntimesClients } from './clients.ts';
export { apiStatus, isConflict, isDefiniteRefusal, isNotFound, refusalError } from './refusal.ts';
export type { Refusal, Refused, WriteResult } from './refusal.ts';
export { fencedWrite, thaw } from './fenced-write.ts';
export type { FencedResult, FencedStep, FencedWrite } from './fenced-write.ts';
export { writeTransition } from './write-transition.ts';

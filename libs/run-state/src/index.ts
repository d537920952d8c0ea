export * from './classification.ts';
export * from './conditions.ts';
export * from './retry.ts';
export * from './transition.ts';

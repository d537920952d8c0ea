export * from './classification.ts';
export * from './conditions.ts';
export * from './retry.ts';
export * from './transition.ts';
export * from './origin.ts';
export * from './artifact-manifest.ts';
export * from './artifact-grant-decision.ts';
export * from './execution-env.ts';

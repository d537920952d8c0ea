export * from './bounds.ts';
export * from './constants.ts';
export * from './phases.ts';
export * from './types.ts';
export * from './validation.ts';
export * from './schedule.ts';
export * from './artifacts.ts';
export * from './input.ts';

export * from './bash-adapter.ts';

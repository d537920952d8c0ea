export * from './artifact-command.ts';
export * from './bash-adapter.ts';

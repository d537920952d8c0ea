export * from './python-adapter.ts';

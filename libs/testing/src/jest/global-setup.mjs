// jest loads globalSetup outside its module transform pipeline, so this entry point is
// plain ESM that lets Node 24 load the TypeScript sources itself (type stripping).
export { default } from './global-setup.ts';

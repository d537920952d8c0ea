// See global-setup.mjs.
export { default } from './global-teardown.ts';

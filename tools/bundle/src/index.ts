export { bundleApp } from './bundle.ts';
export type { BundleOptions, BundleResult } from './bundle.ts';

export * from './workload-pki.ts';

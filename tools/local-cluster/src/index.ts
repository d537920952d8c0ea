export * from './internal-ca.ts';

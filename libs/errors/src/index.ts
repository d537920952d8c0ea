export * from './error-codes.ts';
export * from './kruntimes-error.ts';

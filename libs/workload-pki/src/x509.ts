// The only module that loads @peculiar/x509. Its dependency tsyringe throws at load time unless a
// Reflect metadata API exists, so the shim runs first and the library is imported dynamically:
// a static import could be evaluated before the shim (jest links CommonJS dependencies eagerly).
import './reflect-metadata.ts';

export type * as X509 from '@peculiar/x509';
export const x509 = await import('@peculiar/x509');

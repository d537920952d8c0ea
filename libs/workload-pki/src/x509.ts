// The only module that loads @peculiar/x509, and only when a certificate is made (the
// controller-manager): runtimed, which only reads identities (node:crypto does), never loads
// it (~4 MiB of its RSS). Its dependency tsyringe throws at load time unless a Reflect
// metadata API exists, so the shim runs first and the library is imported dynamically: a
// static import could be evaluated before the shim (jest links CommonJS dependencies eagerly).
import type * as X509 from '@peculiar/x509';

export type { X509 };

let loading: Promise<typeof X509> | undefined;

/** @peculiar/x509, imported on the first call (after the Reflect metadata shim). */
export function loadX509(): Promise<typeof X509> {
  loading ??= import('./reflect-metadata.ts').then(() => import('@peculiar/x509'));
  return loading;
}

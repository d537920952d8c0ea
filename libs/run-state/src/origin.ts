/**
 * A Run executed elsewhere (`spec.origin`, written by `krt sync`): the platform only
 * records its result. The scheduler never binds it and no runtimed ever claims it; the
 * controller-manager's RecordOrigin moves it from Pending to the recorded phase.
 */
export function isExecutedElsewhere(spec: { readonly origin?: unknown }): boolean {
  return spec.origin !== undefined;
}

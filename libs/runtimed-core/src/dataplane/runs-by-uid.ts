import type { Run } from '@kruntimes/api';
import type { ReadonlyDeep, SharedInformer } from '@kruntimes/controller-runtime';
import type { KubernetesObject } from '@kubernetes/client-node';

type RunObject = Run & KubernetesObject;

/**
 * The Run informer cache looked up by UID: an index UID -> name kept by the informer's
 * events, and the answer is always the current cached object of that name, returned
 * only if it still has this UID (a deleted and re-created Run of the same name does
 * not answer for the old UID).
 */
export class RunsByUid {
  readonly #informer: SharedInformer<RunObject>;
  readonly #namespace: string;
  readonly #names = new Map<string, string>();

  constructor(informer: SharedInformer<RunObject>, namespace: string) {
    this.#informer = informer;
    this.#namespace = namespace;
    const set = (run: ReadonlyDeep<RunObject>): void => {
      const { uid, name } = run.metadata;
      if (uid !== undefined && name !== undefined) this.#names.set(uid, name);
    };
    informer.addEventHandler({
      add: set,
      update: set,
      delete: (run) => {
        const { uid } = run.metadata;
        if (uid !== undefined) this.#names.delete(uid);
      },
    });
  }

  get(uid: string): ReadonlyDeep<Run> | undefined {
    const name = this.#names.get(uid);
    if (name === undefined) return undefined;
    // The cache holds what the API server sent: a Run.
    const run = this.#informer.get(name, this.#namespace) as ReadonlyDeep<Run> | undefined;
    return run?.metadata.uid === uid ? run : undefined;
  }
}

import { ARTIFACT_STORE_PLURAL, RUN_INPUT_PLURAL, RUN_PLURAL, RUN_SCHEDULE_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { ArtifactStore, Run, RunInput, RunSchedule, Runtime } from '@kruntimes/api';
import type { KubeConfig } from '@kubernetes/client-node';
import { ObjectClient } from './object-client.ts';

/** One typed client per kruntimes kind, all with the identity of one KubeConfig. */
export interface KruntimesClients {
  runs: ObjectClient<Run>;
  runtimes: ObjectClient<Runtime>;
  runInputs: ObjectClient<RunInput>;
  runSchedules: ObjectClient<RunSchedule>;
  artifactStores: ObjectClient<ArtifactStore>;
}

export function kruntimesClients(kubeConfig: KubeConfig): KruntimesClients {
  return {
    runs: new ObjectClient<Run>(kubeConfig, RUN_PLURAL),
    runtimes: new ObjectClient<Runtime>(kubeConfig, RUNTIME_PLURAL),
    runInputs: new ObjectClient<RunInput>(kubeConfig, RUN_INPUT_PLURAL),
    runSchedules: new ObjectClient<RunSchedule>(kubeConfig, RUN_SCHEDULE_PLURAL),
    artifactStores: new ObjectClient<ArtifactStore>(kubeConfig, ARTIFACT_STORE_PLURAL),
  };
}

/** The Run client alone, for components that touch no other kind. */
export function runClient(kubeConfig: KubeConfig): ObjectClient<Run> {
  return new ObjectClient<Run>(kubeConfig, RUN_PLURAL);
}

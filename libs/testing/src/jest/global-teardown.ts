// jest globalTeardown: stops the control plane of global-setup.ts. If jest never gets
// here (killed, crashed), the watchdog sidecar stops it instead.
import { takeRunningControlPlane } from './state.ts';

export default async function globalTeardown(): Promise<void> {
  await takeRunningControlPlane()?.stop();
}

// jest globalTeardown: stops the control plane of global-setup.ts. If jest never gets
// here (killed, crashed), the watchdog sidecar stops it instead.
import { takeRunningControlPlane } from './state.ts';

/** How long the jest process may outlive the suite before it is ended. */
const EXIT_GRACE_MS = 10_000;

export default async function globalTeardown(): Promise<void> {
  await takeRunningControlPlane()?.stop();
  // A test that failed midway can leave a retry loop running (an elector, an informer)
  // against the control plane just stopped, which would keep jest, and CI, waiting
  // forever. Passing tests stop what they start, so this fires after a failure at most.
  // The results are reported by now; jest's own exit handler keeps a failure's exit code.
  setTimeout(() => {
    process.stderr.write(
      `jest still running ${String(EXIT_GRACE_MS / 1000)} s after the suite ended (a test left work running); exiting\n`,
    );
    process.exit();
  }, EXIT_GRACE_MS).unref();
}

import { ReportingTracker } from './reporting-tracker.ts';

describe('ReportingTracker', () => {
  it('suspects only after N renewals without the Run spanning the grace', () => {
    const tracker = new ReportingTracker({ renewals: 3, minGraceMs: 2_000 });
    expect(tracker.observe('k', 1_000, false, 0)).toBe(false);
    expect(tracker.observe('k', 1_000, false, 0)).toBe(false); // the same renewal seen twice counts once
    expect(tracker.observe('k', 2_000, false, 0)).toBe(false);
    expect(tracker.observe('k', 3_000, false, 0)).toBe(true);
  });

  it('needs the minimum span as well as the count', () => {
    const tracker = new ReportingTracker({ renewals: 2, minGraceMs: 10_000 });
    tracker.observe('k', 1_000, false, 0);
    expect(tracker.observe('k', 2_000, false, 0)).toBe(false);
    expect(tracker.observe('k', 11_000, false, 0)).toBe(true);
  });

  it('a renewal that lists the Run again resets it', () => {
    const tracker = new ReportingTracker({ renewals: 2, minGraceMs: 0 });
    tracker.observe('k', 1_000, false, 0);
    expect(tracker.observe('k', 2_000, true, 0)).toBe(false);
    expect(tracker.observe('k', 3_000, false, 0)).toBe(false);
    expect(tracker.observe('k', 4_000, false, 0)).toBe(true);
  });

  it("renewals not later than the Run's last change do not count", () => {
    const tracker = new ReportingTracker({ renewals: 1, minGraceMs: 0 });
    expect(tracker.observe('k', 5_000, false, 5_000)).toBe(false);
    expect(tracker.size).toBe(0);
    expect(tracker.observe('k', 5_001, false, 5_000)).toBe(true);
  });

  it("forgets a Run's epochs", () => {
    const tracker = new ReportingTracker();
    tracker.observe('uid-1/1/pod', 1_000, false, 0);
    tracker.observe('uid-2/1/pod', 1_000, false, 0);
    tracker.forgetRun('uid-1');
    expect(tracker.size).toBe(1);
    tracker.forget('uid-2/1/pod');
    expect(tracker.size).toBe(0);
  });

  it("remembers when this process first saw the Run's current state, whatever clock wrote it", () => {
    const tracker = new ReportingTracker({ renewals: 1, minGraceMs: 0 });
    // The Run's last change as written (another machine's clock) only identifies the state.
    const writtenFarAhead = Date.parse('2030-01-01T00:00:00Z');
    expect(tracker.runChangeSeenAt('k', writtenFarAhead, 100)).toBe(100);
    expect(tracker.runChangeSeenAt('k', writtenFarAhead, 900)).toBe(100);
    // A renewal this process saw before it saw the change does not count; one seen after does.
    expect(tracker.observe('k', 100, false, tracker.runChangeSeenAt('k', writtenFarAhead, 1_000))).toBe(false);
    expect(tracker.observe('k', 101, false, tracker.runChangeSeenAt('k', writtenFarAhead, 1_000))).toBe(true);
    // A new state (even one written "earlier") is seen anew.
    expect(tracker.runChangeSeenAt('k', 0, 2_000)).toBe(2_000);
    tracker.forgetRun('k');
    tracker.forget('k');
    expect(tracker.runChangeSeenAt('k', 0, 3_000)).toBe(3_000);
  });
});

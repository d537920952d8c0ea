/** One answer a caller got: which function Run, when it ended, whether it was a 200. */
export interface Answer {
  run: string;
  end: number;
  ok: boolean;
}

export interface Gap {
  run: string;
  /** From the 200 before (or the window's start when none came before) to the next 200. */
  from: number;
  to: number;
  /** No 200 came after it: the gap runs to the caller's last answer. */
  open: boolean;
  /** Answers other than 200 inside it: none means the caller sent nothing (it paused, its process stalled), not a refusal. */
  refused: number;
}

/**
 * Per function Run, the longest stretch without a 200 that overlaps one of the windows (the
 * time its callers went unserved during a rollout, say). Stretches lie between consecutive
 * 200 answers by end time, so one that began before the window or ended after it counts
 * whole: that is what the caller lived through.
 */
export function longestGaps(
  answers: readonly Answer[],
  runs: readonly string[],
  windows: readonly { start: number; end: number }[],
): Map<string, Gap | undefined> {
  const result = new Map<string, Gap | undefined>();
  for (const run of runs) {
    const mine = answers.filter((a) => a.run === run).sort((a, b) => a.end - b.end);
    const oks = mine.filter((a) => a.ok).map((a) => a.end);
    const lastAnswer = mine.at(-1)?.end;
    let longest: Gap | undefined;
    for (const window of windows) {
      const before = oks.filter((t) => t <= window.start).at(-1) ?? window.start;
      const inside = oks.filter((t) => t > window.start && t <= window.end);
      const after = oks.find((t) => t > window.end);
      const points = [before, ...inside];
      const gaps: Gap[] = [];
      for (let k = 1; k < points.length; k += 1) gaps.push({ run, from: points[k - 1] ?? 0, to: points[k] ?? 0, open: false, refused: 0 });
      const last = points.at(-1) ?? window.start;
      if (after !== undefined) gaps.push({ run, from: last, to: after, open: false, refused: 0 });
      else gaps.push({ run, from: last, to: Math.max(last, lastAnswer ?? window.end, window.end), open: true, refused: 0 });
      for (const gap of gaps) {
        gap.refused = mine.filter((a) => !a.ok && a.end > gap.from && a.end <= gap.to).length;
        if (longest === undefined || gap.to - gap.from > longest.to - longest.from) longest = gap;
      }
    }
    result.set(run, longest);
  }
  return result;
}

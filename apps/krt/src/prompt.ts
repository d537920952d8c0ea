import { createInterface } from 'node:readline/promises';

/** Asks on the terminal; only y or yes is a yes (Ctrl-C or the end of input at the prompt is a no). */
export async function confirmed(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  const unanswered = new AbortController();
  const noAnswer = (): void => {
    unanswered.abort();
  };
  prompt.once('SIGINT', noAnswer);
  prompt.once('close', noAnswer);
  try {
    const answer = await prompt.question(question, { signal: unanswered.signal }).catch((error: unknown) => {
      if (unanswered.signal.aborted) return '';
      throw error;
    });
    if (unanswered.signal.aborted) process.stderr.write('\n');
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}

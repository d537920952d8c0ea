/**
 * Variables user processes inherit from the server: what an interpreter needs to find
 * its files, nothing else (the server's own configuration stays private). Everything
 * else comes from the Run's env and the KRT_* variables.
 */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'USER'] as const;

export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The committed list of metric families the services export (name, type, service). */
export const EXPORTED_METRICS_FILE = 'tools/chart-checks/exported-metrics.txt';

export interface ExportedMetric {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  service: string;
}

export function readExportedMetrics(workspaceRoot: string): ExportedMetric[] {
  const text = readFileSync(join(workspaceRoot, EXPORTED_METRICS_FILE), 'utf8');
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [name = '', type = '', service = ''] = line.split(/\s+/);
      if (type !== 'counter' && type !== 'gauge' && type !== 'histogram')
        throw new Error(`${EXPORTED_METRICS_FILE}: bad type in ${JSON.stringify(line)}`);
      return { name, type, service };
    });
}

/** `# TYPE name type` lines of a Prometheus text exposition. */
export function familiesOfExposition(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (match[1] !== undefined && match[2] !== undefined) families.set(match[1], match[2]);
  }
  return families;
}

// Writes the CRD YAML into the chart from the TypeScript source (`nx run crds:generate`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CRD_OUTPUT_DIR, allCrds, crdFileName, renderCrdYaml } from '../src/index.ts';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
const outputDir = join(workspaceRoot, CRD_OUTPUT_DIR);
mkdirSync(outputDir, { recursive: true });
for (const crd of allCrds()) {
  const file = join(outputDir, crdFileName(crd));
  writeFileSync(file, renderCrdYaml(crd));
  process.stdout.write(`wrote ${file}\n`);
}

// Writes the CRD YAML and the admission policies into the chart from the TypeScript source (`nx run crds:generate`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ADMISSION_FILE_NAME,
  ADMISSION_OUTPUT_DIR,
  CRD_OUTPUT_DIR,
  allCrds,
  crdFileName,
  renderAdmissionYaml,
  renderCrdYaml,
} from '../src/index.ts';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
const outputDir = join(workspaceRoot, CRD_OUTPUT_DIR);
mkdirSync(outputDir, { recursive: true });
for (const crd of allCrds()) {
  const file = join(outputDir, crdFileName(crd));
  writeFileSync(file, renderCrdYaml(crd));
  process.stdout.write(`wrote ${file}\n`);
}
const admissionDir = join(workspaceRoot, ADMISSION_OUTPUT_DIR);
mkdirSync(admissionDir, { recursive: true });
const admissionFile = join(admissionDir, ADMISSION_FILE_NAME);
writeFileSync(admissionFile, renderAdmissionYaml());
process.stdout.write(`wrote ${admissionFile}\n`);

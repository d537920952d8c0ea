export { CRD_OUTPUT_DIR, GENERATED_HEADER, allCrds, crdFileName, renderCrdYaml } from './render.ts';
export { runCrd, runTemplateSpecSchema } from './run-crd.ts';
export { runInputCrd } from './run-input-crd.ts';
export { runScheduleCrd } from './run-schedule-crd.ts';
export { runtimeCrd } from './runtime-crd.ts';
export type { CelRule, CustomResourceDefinition, JsonSchema, PrinterColumn } from './schema.ts';
export { runSpecProblems } from './validate.ts';
export {
  ADMISSION_FILE_NAME,
  ADMISSION_OUTPUT_DIR,
  admissionObjects,
  renderAdmissionYaml,
  runAdmissionPolicy,
  runCreatorPolicy,
  runScheduleAdmissionPolicy,
} from './admission-policies.ts';
export type { AdmissionObject } from './admission-policies.ts';

// Writes the OpenAPI document of the invoke API from the code's tables (`nx run gateway-core:generate`).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INVOKE_OPENAPI_FILE, renderInvokeOpenApi } from '../src/openapi.ts';

const file = join(import.meta.dirname, '..', '..', '..', INVOKE_OPENAPI_FILE);
writeFileSync(file, renderInvokeOpenApi());
process.stdout.write(`wrote ${file}\n`);

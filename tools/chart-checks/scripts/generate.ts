// Writes the chart files generated from code (`npx nx run chart-checks:generate`): the RBAC
// rules from the services' rule constants, the Grafana dashboards from src/dashboards.ts and
// values.schema.json from src/values-schema.ts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DASHBOARDS,
  DASHBOARD_DIR,
  RBAC_RULES_TEMPLATE,
  VALUES_SCHEMA_FILE,
  WORKSPACE_ROOT,
  renderDashboard,
  renderRbacRulesTemplate,
  renderValuesSchema,
} from '../src/index.ts';

function write(relative: string, content: string): void {
  const file = join(WORKSPACE_ROOT, relative);
  writeFileSync(file, content);
  process.stdout.write(`wrote ${file}\n`);
}

write(RBAC_RULES_TEMPLATE, renderRbacRulesTemplate());
write(VALUES_SCHEMA_FILE, renderValuesSchema());
mkdirSync(join(WORKSPACE_ROOT, DASHBOARD_DIR), { recursive: true });
for (const dashboard of DASHBOARDS) write(join(DASHBOARD_DIR, dashboard.file), renderDashboard(dashboard));

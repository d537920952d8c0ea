import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { WORKSPACE_ROOT } from './workspace.ts';

/** Apps that run on the user's machine, not in a cluster. */
const NOT_DEPLOYED = new Set(['krt']);
const DOCKER_DIR = join(WORKSPACE_ROOT, 'deploy/docker');
/** Their images start the server through the wall's entry (libs/runtime-server-core/bin). */
const RUNTIME_SERVERS = new Set(['runtime-server-bash', 'runtime-server-python']);
const WALL_ENTRY = 'libs/runtime-server-core/bin/krt-wall-entry';
const deployable = readdirSync(join(WORKSPACE_ROOT, 'apps'))
  .filter((app) => !NOT_DEPLOYED.has(app))
  .sort();

function dockerfile(app: string): string {
  return readFileSync(join(DOCKER_DIR, `${app}.Dockerfile`), 'utf8');
}

describe('Dockerfiles', () => {
  it('exist for every deployable app and for nothing else', () => {
    const files = readdirSync(DOCKER_DIR)
      .filter((file) => file.endsWith('.Dockerfile'))
      .map((file) => file.replace(/\.Dockerfile$/, ''))
      .sort();
    expect(files).toEqual(deployable);
  });

  it.each(deployable)(
    '%s: the entry point is the bundled build of apps/<app> (tools/bundle), made as its nx bundle target makes it',
    (app) => {
      const text = dockerfile(app);
      const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(text)?.[1] ?? 'null') as string[] | null;
      expect(entrypoint).not.toBeNull();
      expect(entrypoint?.slice(-2)).toEqual(['node', 'main.mjs']);
      const project = JSON.parse(readFileSync(join(WORKSPACE_ROOT, 'apps', app, 'project.json'), 'utf8')) as {
        targets: Record<string, { options?: { args?: string } } | undefined>;
      };
      const bundle = project.targets.bundle;
      expect(bundle).toBeDefined();
      const assets = bundle?.options?.args === undefined ? '' : ` ${bundle.options.args}`;
      expect(text).toContain(`RUN node tools/bundle/src/main.ts apps/${app}${assets} --out /bundle\n`);
      expect(existsSync(join(WORKSPACE_ROOT, 'apps', app, 'src', 'main.ts'))).toBe(true);
    },
  );

  it.each(deployable)(
    '%s: Node 24 base, the bundle alone in the final stage (no node_modules, no sources; a Runtime Server its entry script), a non-root user',
    (app) => {
      const text = dockerfile(app);
      const engines = (JSON.parse(readFileSync(join(WORKSPACE_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines
        .node;
      expect(engines).toMatch(/^>=24\./);
      expect(text).toMatch(/^ARG NODE_IMAGE=node:24-slim$/m);
      expect(text).toMatch(/^USER 65532:65532$/m);
      // Multi-stage: the package.json files and the lockfile alone, the dependencies installed
      // from them (a layer that only their changes rebuild), then the sources and the bundle.
      expect(text.match(/^FROM .*$/gm)).toEqual(['FROM ${NODE_IMAGE} AS manifests', 'FROM ${NODE_IMAGE} AS build', 'FROM ${NODE_IMAGE}']);
      const build = text.slice(text.indexOf('AS build'), text.lastIndexOf('FROM '));
      expect(build.match(/^(COPY|ADD) .*$/gm)).toEqual(['COPY --from=manifests /manifests/ ./', 'COPY . .']);
      expect(build.indexOf('RUN npm ci ')).toBeLessThan(build.indexOf('COPY . .'));
      const final = text.slice(text.lastIndexOf('FROM '));
      expect(final.match(/^(COPY|ADD) .*$/gm)).toEqual([
        'COPY --from=build /bundle ./',
        ...(RUNTIME_SERVERS.has(app) ? [`COPY --from=build /src/${WALL_ENTRY} /usr/local/bin/krt-wall-entry`] : []),
      ]);
    },
  );

  it.each([...RUNTIME_SERVERS])('%s starts the server through krt-wall-entry under tini', (app) => {
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile(app))?.[1] ?? 'null') as string[] | null;
    expect(entrypoint).toEqual(['/usr/bin/tini', '--', '/usr/local/bin/krt-wall-entry', 'node', 'main.mjs']);
    expect(existsSync(join(WORKSPACE_ROOT, WALL_ENTRY))).toBe(true);
  });

  it.each(deployable)('%s builds with buildah 1.28 too (tools/real-node/images.sh): no COPY --parents, no syntax directive', (app) => {
    const text = dockerfile(app);
    expect(text).not.toMatch(/^(COPY|ADD) .*--parents/m);
    expect(text).not.toMatch(/^# *syntax=/m);
  });

  it('the python Runtime Server image has python3', () => {
    expect(dockerfile('runtime-server-python')).toMatch(/apt-get install -y --no-install-recommends python3/);
  });

  it.each(deployable)('%s has an nx docker-build target', (app) => {
    const project = JSON.parse(readFileSync(join(WORKSPACE_ROOT, 'apps', app, 'project.json'), 'utf8')) as {
      targets: Record<string, { command?: string }>;
    };
    expect(project.targets['docker-build']?.command).toBe(`deploy/docker/build.sh ${app}`);
  });
});

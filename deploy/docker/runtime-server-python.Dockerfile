# Runtime Server for python Runs (the runtime-server container of python Runtime Pods).
# Build from the repository root: docker build -f deploy/docker/runtime-server-python.Dockerfile -t kruntimes/runtime-server-python .
# (or: npx nx run runtime-server-python:docker-build). The image holds the app's bundled
# build (tools/bundle, `npx nx run runtime-server-python:bundle`): one ES module with every library and
# dependency in it, so the process starts without node_modules and without type stripping
# (docs/operations.md, "Footprint").
ARG NODE_IMAGE=node:24-slim

# Every workspace's package.json and the lockfile, alone (what `COPY --parents` would copy;
# buildah, which builds the images of tools/real-node, has no --parents): the build stage
# copies them, so that its npm ci layer is rebuilt only when one of them changes. Their
# times are zeroed: buildah's layer cache compares them too.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && cp --parents package.json package-lock.json apps/*/package.json libs/*/package.json tools/*/package.json e2e/package.json /manifests/ \
 && find /manifests -exec touch -h -d @0 {} +

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# npm ci checks every workspace's package.json against the lockfile; with the dev
# dependencies: esbuild bundles. No install scripts: esbuild's binary is an optional package.
COPY --from=manifests /manifests/ ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN node tools/bundle/src/main.ts apps/runtime-server-python --asset pylib --asset shim --out /bundle

FROM ${NODE_IMAGE}
# The Runtime Server runs user handlers with the system python3 (krt_worker.py shim);
# tini as PID 1 reaps what user code leaves behind.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /bundle ./
# Walls the Runs of a walled Pod (hidden /proc, no user namespaces, no_new_privs), then
# drops the capabilities that took; elsewhere it only starts the server.
COPY --from=build /src/libs/runtime-server-core/bin/krt-wall-entry /usr/local/bin/krt-wall-entry
USER 65532:65532
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/krt-wall-entry", "node", "main.mjs"]

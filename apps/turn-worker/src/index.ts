export { defaultAgent, type WorkerAgent } from './default-agent';
export { startWorker, type Worker } from './worker';

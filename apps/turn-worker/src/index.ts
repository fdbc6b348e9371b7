export { startWorker, type Worker } from './worker';

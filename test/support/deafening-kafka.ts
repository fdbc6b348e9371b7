import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';

/**
 * A Kafka client whose connections can stop hearing the broker: while `deaf`, what the broker
 * sends is held back (the requests still reach it and are written), and handed over late, in
 * order, once it hears again — a network that drops answers, as a broker failover can.
 */
export function deafeningKafka(brokers: string, clientId = 'deafening') {
  const state = { deaf: false };
  const held: { socket: net.Socket; chunk: unknown }[] = [];
  const kafka = new Kafka({
    clientId,
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
    requestTimeout: 1000,
    retry: { initialRetryTime: 100, retries: 2 },
    socketFactory: ({ host, port, onConnect }) => {
      const socket = net.connect({ host, port }, onConnect);
      const emit = socket.emit.bind(socket);
      socket.emit = (event: string | symbol, ...args: unknown[]) => {
        if (event === 'data' && state.deaf) {
          held.push({ socket, chunk: args[0] });
          return true;
        }
        return emit(event, ...args);
      };
      return socket;
    },
  });
  return {
    kafka,
    deafen: () => void (state.deaf = true),
    hear: () => {
      state.deaf = false;
      for (const { socket, chunk } of held.splice(0)) if (!socket.destroyed) socket.emit('data', chunk);
    },
  };
}

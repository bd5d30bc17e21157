/**
 * The `rocketmq` suite: the same workload through the embedded broker and through RocketMQ
 * (`Broker.connect`), in one run. `npm run bench:rocketmq` starts the test cluster (as
 * `npm run test:rocketmq` does) and runs this suite against it; without
 * LITETOPIC_ROCKETMQ_ENDPOINTS the suite measures the embedded broker alone and says so.
 *
 * Workload: `liteTopics` lite topics, `messages` messages of BODY_BYTES bytes, sent with single
 * `send` calls at a fixed number in flight (1, then SEND_CONCURRENCY), then consumed by one consumer
 * subscribed to every lite topic (POP 32 with long poll, acks in parallel) until it has them all.
 * To find where RocketMQ's time goes it also times one call alone (a send's round trip and an empty
 * POP's: client → proxy → broker → back, no queueing), and, when the cluster's JVMs run on this
 * machine (the test cluster), the CPU time the brokers, the proxy and this client spend per message
 * of the parallel send round, read from /proc.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Broker, RemoteBroker } from '../ts/index.js';
import { lib } from './lib.js';
import type { Table } from './table.js';

const BODY_BYTES = 128;
const SEND_CONCURRENCY = 64;
const ROUND_TRIPS = 100;

type AnyBroker = Broker | RemoteBroker;

export interface RocketmqBackendFigures {
  backend: 'embedded' | 'rocketmq';
  /** Sends per second with one in flight, and with SEND_CONCURRENCY in flight. */
  sendsPerSecondSerial: number;
  sendsPerSecondParallel: number;
  /** Messages per second from the first send to the last ack, consumer running alongside. */
  endToEndPerSecond: number;
  received: number;
  /** One call alone, ms (RocketMQ only). */
  sendRoundTripMs: number | null;
  emptyPopRoundTripMs: number | null;
  /** CPU ms per message of the parallel send round: brokers together, proxy, this process. */
  cpuMsPerSend: { brokers: number; proxy: number; client: number } | null;
}

export interface RocketmqBenchResult {
  config: { liteTopics: number; messages: number; bodyBytes: number; sendConcurrency: number; quick: boolean };
  /** Why RocketMQ was not measured, when it was not. */
  rocketmqSkipped: string | null;
  backends: RocketmqBackendFigures[];
}

async function sendAll(broker: AnyBroker, messages: { liteTopic: string; body: string }[], inFlight: number) {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < messages.length; i = next++) await broker.send('bench', messages[i] as never);
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return Math.round(messages.length / ((performance.now() - started) / 1000));
}

/** The RocketMQ JVMs visible on this machine, by role (empty when the cluster runs elsewhere). */
function clusterProcesses(): { pid: number; role: 'broker' | 'proxy' | 'namesrv' }[] {
  let listing: string;
  try {
    listing = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return listing
    .split('\n')
    .filter((line) => line.includes('org.apache.rocketmq.'))
    .map((line) => {
      const pid = Number(line.trim().split(/\s+/)[0]);
      const role = line.includes('BrokerStartup') ? 'broker' : line.includes('ProxyStartup') ? 'proxy' : 'namesrv';
      return { pid, role } as const;
    })
    .filter(({ pid }) => existsSync(`/proc/${pid}/stat`));
}

/** User + system CPU of a process in ms (clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

function selfCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

async function measure(
  backend: RocketmqBackendFigures['backend'],
  broker: AnyBroker,
  config: RocketmqBenchResult['config'],
): Promise<RocketmqBackendFigures> {
  const body = 'x'.repeat(config.bodyBytes);
  const names = Array.from({ length: config.liteTopics }, (_, i) => `lite-${i}`);
  const batch = (tag: string) =>
    Array.from({ length: config.messages }, (_, i) => ({
      liteTopic: names[i % names.length] as string,
      body: `${tag}${body}`,
    }));
  await broker.createTopic('bench');
  await broker.createGroup('readers', { bindTopic: 'bench' });
  // Sends alone, first one at a time, then many in flight (nobody consumes yet).
  const serial = await sendAll(broker, batch('s').slice(0, Math.min(config.messages, 500)), 1);
  const processes = backend === 'rocketmq' ? clusterProcesses() : [];
  const cpuBefore = processes.map(({ pid }) => processCpuMs(pid));
  const clientBefore = selfCpuMs();
  const parallel = await sendAll(broker, batch('p'), config.sendConcurrency);
  const clientCpu = selfCpuMs() - clientBefore;
  const spent = { broker: 0, proxy: 0, namesrv: 0 };
  processes.forEach(({ pid, role }, i) => {
    spent[role] += processCpuMs(pid) - (cpuBefore[i] as number);
  });
  const perSend = (ms: number) => Number((ms / config.messages).toFixed(2));
  const cpuMsPerSend =
    processes.length === 0
      ? null
      : { brokers: perSend(spent.broker), proxy: perSend(spent.proxy), client: perSend(clientCpu) };
  // End to end: a consumer from the first message of a new round; it skips the rounds above.
  const consumer = broker.consumer({ group: 'readers', clientId: 'reader' });
  await consumer.subscribe(names);
  const started = performance.now();
  let received = 0;
  const consuming = (async () => {
    let idle = 0;
    while (received < config.messages && idle < 10) {
      const popped = await consumer.pop({ maxNum: 32, waitMs: 1_000, invisibleTimeMs: 60_000 });
      idle = popped.length === 0 ? idle + 1 : 0;
      received += popped.length;
      await Promise.all(popped.map((message) => consumer.ack(message)));
    }
  })();
  await sendAll(broker, batch('e'), config.sendConcurrency);
  await consuming;
  const endToEnd = Math.round(received / ((performance.now() - started) / 1000));
  let sendRoundTripMs: number | null = null;
  let emptyPopRoundTripMs: number | null = null;
  if (backend === 'rocketmq') {
    let at = performance.now();
    for (let i = 0; i < ROUND_TRIPS; i++) await broker.send('bench', { liteTopic: 'probe', body: 'x' });
    sendRoundTripMs = Number(((performance.now() - at) / ROUND_TRIPS).toFixed(2));
    at = performance.now();
    for (let i = 0; i < ROUND_TRIPS / 4; i++) await consumer.pop({ maxNum: 1 });
    emptyPopRoundTripMs = Number(((performance.now() - at) / (ROUND_TRIPS / 4)).toFixed(2));
  }
  await consumer.close();
  await broker.close();
  return {
    backend,
    sendsPerSecondSerial: serial,
    sendsPerSecondParallel: parallel,
    endToEndPerSecond: endToEnd,
    received,
    sendRoundTripMs,
    emptyPopRoundTripMs,
    cpuMsPerSend,
  };
}

export async function runRocketmqBench(options: { quick: boolean }): Promise<RocketmqBenchResult> {
  const config = {
    liteTopics: options.quick ? 50 : 200,
    messages: options.quick ? 1_000 : 4_000,
    bodyBytes: BODY_BYTES,
    sendConcurrency: SEND_CONCURRENCY,
    quick: options.quick,
  };
  const backends = [await measure('embedded', await lib.Broker.open(), config)];
  const endpoints = process.env.LITETOPIC_ROCKETMQ_ENDPOINTS;
  let rocketmqSkipped: string | null = null;
  if (endpoints === undefined) {
    rocketmqSkipped = 'LITETOPIC_ROCKETMQ_ENDPOINTS not set (run `npm run bench:rocketmq`)';
    console.log(`rocketmq: ${rocketmqSkipped}; the embedded broker only`);
  } else {
    const namespace = `bench${Date.now().toString(36)}`;
    backends.push(await measure('rocketmq', await lib.Broker.connect({ endpoints, namespace }), config));
  }
  const result = { config, rocketmqSkipped, backends };
  for (const table of rocketmqTables(result)) {
    console.log(`\n${table.title}`);
    console.table(table.rows.map((row) => Object.fromEntries(row.map((cell, i) => [table.headers[i], cell]))));
  }
  return result;
}

export function rocketmqTables(result: RocketmqBenchResult): Table[] {
  const { config } = result;
  const ms = (value: number | null) => (value === null ? '—' : `${value} ms`);
  return [
    {
      title: `Embedded and RocketMQ, ${config.liteTopics} lite topics, ${config.messages} messages of ${config.bodyBytes} B`,
      note: result.rocketmqSkipped === null ? undefined : `RocketMQ not measured: ${result.rocketmqSkipped}.`,
      headers: [
        // `engine`: what the embedded broker calls its engine, and a connected broker `rocketmq`.
        'engine',
        'sends/s, 1 in flight',
        `sends/s, ${config.sendConcurrency} in flight`,
        'end to end msgs/s',
        'received',
        'one send alone',
        'one empty POP alone',
        'CPU per send: brokers / proxy / client',
      ],
      rows: result.backends.map((b) => [
        b.backend,
        String(b.sendsPerSecondSerial),
        String(b.sendsPerSecondParallel),
        String(b.endToEndPerSecond),
        String(b.received),
        ms(b.sendRoundTripMs),
        ms(b.emptyPopRoundTripMs),
        b.cpuMsPerSend === null
          ? '—'
          : `${b.cpuMsPerSend.brokers} / ${b.cpuMsPerSend.proxy} / ${b.cpuMsPerSend.client} ms`,
      ]),
    },
  ];
}

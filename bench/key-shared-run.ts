/**
 * One key-shared run: a fresh in-memory broker with system timers, the parent
 * `agents`, one hot lite topic `hot` and the key-shared group `workers`. A producer keeps a backlog of
 * messages on `keys` uniformly drawn keys (seeded); clients join one by one up to each phase's count
 * and are never removed. Every client is one async loop: `pop` (long poll) up to `popMax` messages,
 * then for each message in turn "process" it (await a `processMs` system timer) and ack it, so a
 * client handles one message at a time and the clients run concurrently.
 *
 * Every delivery is checked as it is popped: (I1) no other client holds an unacked message of its key,
 * nor of its bucket; (I2) a first delivery of a key is the message right after the key's previous
 * first delivery in offset order (so also no gap); and exactly once (a redelivery cannot happen with
 * the invisible time used, so it counts as a violation too).
 */
import type { EngineName } from '../ts/index.js';
import { GROUP, PARENT, Run, sleep } from './key-shared-clients.js';
import type { KeySharedRunConfig, KeySharedRunResult, PhaseFigures } from './key-shared-result.js';
import { lib } from './lib.js';

/** Runs the phases once on `engine` and returns the figures; throws if a client or the producer failed. */
export async function runKeyShared(
  engine: EngineName,
  config: KeySharedRunConfig,
  progress: (line: string) => void,
): Promise<KeySharedRunResult> {
  const broker = await lib.Broker.open({ engine });
  const run = new Run(broker, config);
  try {
    broker.createTopic(PARENT);
    broker.createGroup(GROUP, { bindTopic: PARENT, subModel: 'shared', keyShared: { buckets: config.buckets } });
    await run.send(config.backlog);
    const producer = run.produce().catch((error: unknown) => {
      run.failure ??= error;
      run.stop = true;
    });
    const phases: PhaseFigures[] = [];
    for (const clients of config.phases) {
      while (run.clients.length < clients) {
        await run.join();
        await sleep(config.joinGapMs);
      }
      await sleep(config.settleMs);
      const cpu = process.cpuUsage();
      const start = {
        at: performance.now(),
        acked: run.acked,
        empty: run.emptyPops,
        sum: run.timerSum,
        n: run.timerCount,
      };
      run.minReady = Number.POSITIVE_INFINITY;
      await sleep(config.phaseMs);
      if (run.failure !== undefined) throw run.failure;
      const ms = performance.now() - start.at;
      const used = process.cpuUsage(cpu);
      const acks = run.acked - start.acked;
      const rate = (acks / ms) * 1000;
      const timerMs = (run.timerSum - start.sum) / (run.timerCount - start.n);
      const phase: PhaseFigures = {
        clients,
        acks,
        ms,
        messagesPerSecond: rate,
        timerMs,
        efficiency: rate / ((clients * 1000) / timerMs),
        emptyPops: run.emptyPops - start.empty,
        minReady: run.minReady,
        cpuShare: (used.user + used.system) / 1000 / ms,
      };
      phases.push(phase);
      const v = run.violations;
      progress(
        `${engine}, ${clients} client${clients === 1 ? '' : 's'}: ${Math.round(rate).toLocaleString('en-US')} msgs/s ` +
          `(${(phase.efficiency * 100).toFixed(0)}% of ${clients} × 1 per ${timerMs.toFixed(2)} ms timer), ` +
          `process CPU ${(phase.cpuShare * 100).toFixed(0)}%, ${phase.emptyPops} empty pops, ≥ ${phase.minReady} ready; violations so far I1 ${v.i1Key + v.i1Bucket}, I2 ${v.i2}`,
      );
    }
    run.stop = true;
    for (const client of run.clients) await client.consumer.close();
    await Promise.all([producer, ...run.clients.map((c) => c.loop)]);
    if (run.failure !== undefined) throw run.failure;
    for (const pending of run.pendingMoved) if (pending !== undefined) pending.join.unresolved++;
    return { engine, phases, joins: run.joins, sent: run.sent, deliveries: run.deliveries, violations: run.violations };
  } finally {
    run.stop = true;
    await broker.close();
  }
}

/**
 * The harness alone, no broker: `clients` loops that each await the same `processMs` timer in turn
 * for `ms`. Its rate is the ceiling the broker runs are held against.
 */
export async function runTimersOnly(clients: number, ms: number, processMs: number): Promise<PhaseFigures> {
  let stop = false;
  let count = 0;
  let sum = 0;
  const loops = Array.from({ length: clients }, async () => {
    while (!stop) {
      const started = performance.now();
      await sleep(processMs);
      sum += performance.now() - started;
      count++;
    }
  });
  const at = performance.now();
  const cpu = process.cpuUsage();
  await sleep(ms);
  stop = true;
  const elapsed = performance.now() - at;
  const used = process.cpuUsage(cpu);
  const acks = count;
  const timerMs = sum / Math.max(1, acks);
  await Promise.all(loops);
  const rate = (acks / elapsed) * 1000;
  return {
    clients,
    acks,
    ms: elapsed,
    messagesPerSecond: rate,
    timerMs,
    efficiency: rate / ((clients * 1000) / timerMs),
    emptyPops: Number.NaN,
    minReady: Number.NaN,
    cpuShare: (used.user + used.system) / 1000 / elapsed,
  };
}

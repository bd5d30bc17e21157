/**
 * Expiry of idle lite topics: a broker on disk holds `topics` lite topics, one in
 * ten of them (every index that is a multiple of 10) written two hours ago and the rest just now,
 * under `liteTopicExpirationMs` of one hour. The clock is the system
 * clock plus a skew the benchmark sets (−2 h while it writes the idle ones), with real timers, so
 * latency is real time; the broker's own maintenance timer is set to an hour so that only the
 * benchmark runs sweeps, with `broker.runMaintenance()`.
 *
 * Then a paced load (one producer, `sendBatch` of the messages due every ms, over `loadTopics` active
 * lite topics that two long-polling clients of a shared group subscribe to) runs throughout, in
 * alternating windows: "expiry off" (no sweep) and "sweeping" (a `runMaintenance()` every
 * `sweepEveryMs`, each expiring up to 1,000 lite topics), until every idle lite topic is gone, with
 * at least `minWindows` windows of each. Latency = when `pop` resolved − just before the `sendBatch`,
 * attributed to the window the message was sent in. A third client subscribes to `watchTopics` idle
 * lite topics and must hear `unsubscribed` (`expired`) for each. Checked at the end: every message
 * delivered exactly once, exactly the idle lite topics expired and every active one remains.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Broker, Consumer } from '../ts/index.js';
import { lib, stats } from './lib.js';
import { BODY_BYTES, type Engine, liteTopicName, PARENT } from './lifecycle-reopen.js';
import { removeDir, tempDir } from './log-disk.js';
import { figure } from './table.js';

const { quantile, quantiles } = stats;

const HOUR_MS = 3_600_000;
const GROUP = 'planner';
const SEND_BATCH = 1000;

export interface ExpiryConfig {
  topics: number;
  /** Every tenth lite topic is idle. */
  idle: number;
  loadTopics: number;
  watchTopics: number;
  /** Paced load, messages per second. */
  rate: number;
  windowMs: number;
  sweepEveryMs: number;
  minWindows: number;
  maxWindows: number;
}

export interface PhaseLatency {
  phase: 'expiry off' | 'sweeping';
  windows: number;
  deliveries: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * The p99 of each of the phase's windows on its own, and their median: one window hit by
   * something else on the machine (a GC, a neighbour) moves the p99 over all of them, not this.
   */
  windowP99Ms: number[];
  medianWindowP99Ms: number;
  /** Event-loop delay in the phase's windows (perf_hooks, 1 ms resolution): the highest window p99, the max. */
  loopP99Ms: number;
  loopMaxMs: number;
}

export interface ExpiryRow {
  engine: Engine;
  topics: number;
  idle: number;
  setupMs: number;
  /** Sweeps that expired something, and their wall time (`runMaintenance()`), ms. */
  sweeps: number;
  sweepP50Ms: number;
  sweepP99Ms: number;
  sweepMaxMs: number;
  expired: number;
  /** Wall time from the first sweep to the last idle lite topic gone, ms. */
  expireAllMs: number;
  unsubscribedEvents: number;
  phases: PhaseLatency[];
  error?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes one message to every lite topic: the idle ones two hours back on the broker's clock. */
async function populate(broker: Broker, clock: { skewMs: number }, names: readonly string[]): Promise<void> {
  const body = Buffer.alloc(BODY_BYTES, 'i');
  for (const idle of [true, false]) {
    clock.skewMs = idle ? -2 * HOUR_MS : 0;
    let batch: { liteTopic: string; body: Buffer }[] = [];
    for (let i = 0; i < names.length; i++) {
      if ((i % 10 === 0) !== idle) continue;
      batch.push({ liteTopic: names[i] as string, body });
      if (batch.length === SEND_BATCH) {
        await broker.sendBatch(PARENT, batch);
        batch = [];
      }
    }
    if (batch.length > 0) await broker.sendBatch(PARENT, batch);
  }
  clock.skewMs = 0;
}

interface Load {
  sentAt: Float64Array;
  phaseOf: Uint8Array;
  /** The window each message was sent in; -1 in the warm-up. */
  windowOf: Int16Array;
  received: Uint8Array;
  latency: [number[], number[]];
  /** Latencies by the window the message was sent in. */
  byWindow: number[][];
  sent: number;
  duplicates: number;
}

async function consume(consumer: Consumer, load: Load, running: () => boolean): Promise<void> {
  while (running()) {
    const popped = await consumer.pop({ maxNum: 32, invisibleTimeMs: 30_000, waitMs: 100 });
    const now = performance.now();
    for (const m of popped) {
      const seq = m.body.readUInt32LE(0);
      if (load.received[seq] === 1) load.duplicates++;
      load.received[seq] = 1;
      const latency = now - (load.sentAt[seq] as number);
      load.latency[load.phaseOf[seq] as 0 | 1].push(latency);
      const window = load.windowOf[seq] as number;
      if (window < 0) continue;
      const inWindow = load.byWindow[window];
      if (inWindow === undefined) load.byWindow[window] = [latency];
      else inWindow.push(latency);
    }
    for (const m of popped) await consumer.ack(m);
  }
}

/** One engine: set up, alternate windows until every idle lite topic expired, check, tear down. */
export async function benchExpiry(engine: Engine, config: ExpiryConfig): Promise<ExpiryRow> {
  const row: ExpiryRow = {
    engine,
    topics: config.topics,
    idle: config.idle,
    setupMs: Number.NaN,
    sweeps: 0,
    sweepP50Ms: Number.NaN,
    sweepP99Ms: Number.NaN,
    sweepMaxMs: Number.NaN,
    expired: 0,
    expireAllMs: Number.NaN,
    unsubscribedEvents: 0,
    phases: [],
  };
  const dir = tempDir(`expiry-${engine}`);
  const skew = { skewMs: 0 };
  const clock = { now: () => Date.now() + skew.skewMs };
  let broker: Broker | undefined;
  let running = true;
  try {
    const started = performance.now();
    broker = await lib.Broker.open({
      dir,
      engine,
      clock,
      timers: 'system',
      maintenanceIntervalMs: HOUR_MS,
      sessionTimeoutMs: 0,
    });
    broker.createTopic(PARENT, { liteTopicExpirationMs: HOUR_MS });
    broker.createGroup(GROUP, { bindTopic: PARENT, subModel: 'shared' });
    const names = Array.from({ length: config.topics }, (_, i) => liteTopicName(i));
    await populate(broker, skew, names);
    if (broker.admin.brokerInfo().liteTopics !== config.topics) throw new Error('not every lite topic was created');
    const active = names.filter((_, i) => i % 10 !== 0);
    const loadNames = active
      .filter((_, i) => i % Math.floor(active.length / config.loadTopics) === 0)
      .slice(0, config.loadTopics);
    const half = Math.ceil(loadNames.length / 2);
    const clients = [
      broker.consumer({ group: GROUP, clientId: 'load-0' }),
      broker.consumer({ group: GROUP, clientId: 'load-1' }),
    ];
    await clients[0]?.subscribe(loadNames.slice(0, half));
    await clients[1]?.subscribe(loadNames.slice(half));
    const watcher = broker.consumer({ group: GROUP, clientId: 'watch' });
    watcher.on('unsubscribed', (event) => {
      if (event.reason === 'expired') row.unsubscribedEvents++;
    });
    await watcher.subscribe(names.filter((_, i) => i % 10 === 0).slice(0, config.watchTopics));
    row.setupMs = performance.now() - started;
    console.log(
      `  ${engine}: ${config.topics.toLocaleString('en-US')} lite topics written in ${figure(row.setupMs / 1000)} s`,
    );

    const capacity = Math.ceil((config.rate * ((config.maxWindows + 2) * config.windowMs + 10_000)) / 1000);
    const load: Load = {
      sentAt: new Float64Array(capacity),
      phaseOf: new Uint8Array(capacity),
      windowOf: new Int16Array(capacity),
      received: new Uint8Array(capacity),
      latency: [[], []],
      byWindow: [],
      sent: 0,
      duplicates: 0,
    };
    const consumers = clients.map((c) => consume(c as Consumer, load, () => running));
    let phase = 0; // 0: expiry off, 1: sweeping
    let window = -1; // the warm-up
    let producing = true;
    const producer = (async () => {
      const begin = performance.now();
      while (producing) {
        const due = Math.min(capacity, Math.floor(((performance.now() - begin) * config.rate) / 1000));
        if (due > load.sent) {
          const count = Math.min(64, due - load.sent);
          const at = performance.now();
          const batch = [];
          for (let k = 0; k < count; k++) {
            const seq = load.sent + k;
            const body = Buffer.alloc(BODY_BYTES, 'l');
            body.writeUInt32LE(seq, 0);
            load.sentAt[seq] = at;
            load.phaseOf[seq] = phase;
            load.windowOf[seq] = window;
            batch.push({ liteTopic: loadNames[seq % loadNames.length] as string, body });
          }
          load.sent += count;
          await broker?.sendBatch(PARENT, batch);
        } else await sleep(1);
      }
    })();
    await sleep(config.windowMs); // warm-up, not counted
    load.latency[0].length = 0;
    const sweepMs: number[] = [];
    // A fresh monitor per window: one re-enabled after a pause counts the pause as delay.
    const loopP99: [number[], number[]] = [[], []];
    const loopMax: [number[], number[]] = [[], []];
    const windows = [0, 0];
    let firstSweep = Number.NaN;
    for (let w = 0; w < config.maxWindows; w++) {
      const done = row.expired >= config.idle;
      if (done && (windows[0] as number) >= config.minWindows && (windows[1] as number) >= config.minWindows) break;
      phase = w % 2;
      window = w;
      windows[phase] = (windows[phase] as number) + 1;
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const end = performance.now() + config.windowMs;
      if (phase === 0) await sleep(config.windowMs);
      while (phase === 1 && performance.now() < end) {
        // topicInfo is O(1); brokerInfo walks every LMQ for its storage figures, which would charge
        // the benchmark's own bookkeeping to the sweep. No lite topic is created during the load.
        const before = broker.admin.topicInfo(PARENT).liteTopics;
        const at = performance.now();
        if (Number.isNaN(firstSweep)) firstSweep = at;
        await broker.runMaintenance();
        const took = performance.now() - at;
        const expired = before - broker.admin.topicInfo(PARENT).liteTopics;
        if (expired > 0) {
          sweepMs.push(took);
          row.expired += expired;
          if (row.expired >= config.idle) row.expireAllMs = performance.now() - firstSweep;
        }
        await sleep(Math.max(0, Math.min(end - performance.now(), config.sweepEveryMs - took)));
      }
      loop.disable();
      loopP99[phase as 0 | 1].push(loop.percentile(99) / 1e6);
      loopMax[phase as 0 | 1].push(loop.max / 1e6);
    }
    window = -1; // what is sent after the last window counts in none
    producing = false;
    await producer;
    const drainUntil = performance.now() + 10_000;
    while (load.received.subarray(0, load.sent).includes(0) && performance.now() < drainUntil) await sleep(10);
    running = false;
    await Promise.all(consumers);
    const [sweepP50, sweepP99, sweepMax] = quantiles(sweepMs, [0.5, 0.99, 1]) as [number, number, number];
    row.sweeps = sweepMs.length;
    row.sweepP50Ms = sweepP50;
    row.sweepP99Ms = sweepP99;
    row.sweepMaxMs = sweepMax;
    row.phases = (['expiry off', 'sweeping'] as const).map((name, i) => {
      const latency = load.latency[i as 0 | 1];
      const [p50Ms, p99Ms, maxMs] = quantiles(latency, [0.5, 0.99, 1]) as [number, number, number];
      const windowP99Ms: number[] = [];
      for (let w = i; w < load.byWindow.length; w += 2) {
        const inWindow = load.byWindow[w];
        if (inWindow !== undefined && inWindow.length > 0) windowP99Ms.push(quantile(inWindow, 0.99));
      }
      return {
        phase: name,
        windows: windows[i] as number,
        deliveries: latency.length,
        p50Ms,
        p99Ms,
        maxMs,
        windowP99Ms,
        // The lower middle of an even count: a window's own figure, not a mean of two.
        medianWindowP99Ms: quantile(windowP99Ms, 0.5),
        loopP99Ms: Math.max(...loopP99[i as 0 | 1]),
        loopMaxMs: Math.max(...loopMax[i as 0 | 1]),
      };
    });
    const problems: string[] = [];
    const missing = load.received.subarray(0, load.sent).filter((r) => r === 0).length;
    if (missing > 0) problems.push(`${missing} of ${load.sent} messages never delivered`);
    if (load.duplicates > 0) problems.push(`${load.duplicates} duplicate deliveries`);
    const info = broker.admin.brokerInfo();
    if (row.expired !== config.idle || info.expiredLiteTopics !== config.idle)
      problems.push(`${info.expiredLiteTopics} lite topics expired, ${config.idle} were idle`);
    if (info.liteTopics !== config.topics - config.idle)
      problems.push(`${info.liteTopics} lite topics left, expected ${config.topics - config.idle}`);
    const gone = active.filter((_, i) => i % 97 === 0).find((n) => broker?.admin.liteTopicInfo(PARENT, n) === null);
    if (gone !== undefined) problems.push(`active lite topic ${gone} expired`);
    if (row.unsubscribedEvents !== config.watchTopics)
      problems.push(`${row.unsubscribedEvents} of ${config.watchTopics} expected unsubscribed events`);
    if (problems.length > 0) row.error = problems.join('; ');
  } catch (error) {
    row.error = error instanceof Error ? (error.stack ?? error.message) : String(error);
  } finally {
    running = false;
    await broker?.close().catch(() => undefined);
    removeDir(dir);
  }
  return row;
}

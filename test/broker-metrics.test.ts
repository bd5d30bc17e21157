/**
 * `broker.metrics()`, `broker.metricsText()` and the diagnostics channels after a scenario whose
 * counts are known, on every engine: sends, deliveries, a redelivery, acks, a dead letter, an expiry
 * and a quota refusal. The text is read back with a Prometheus text-format parser.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import parsePrometheusTextFormat, { type PrometheusFamily } from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { QuotaExceededError } from '../ts/index.js';
import { openBroker, sendMany } from './broker-helpers.js';
import { ENGINES } from './engines.js';

/** The sample of `family` whose labels include `labels`, as a number. */
function sample(families: PrometheusFamily[], family: string, labels: Record<string, string> = {}): number {
  const found = families.find((f) => f.name === family);
  if (found === undefined) throw new Error(`no family ${family}`);
  const match = found.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (match?.value === undefined) throw new Error(`no sample ${family}${JSON.stringify(labels)}`);
  return Number(match.value);
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('counts a known scenario, and the text says the same to a Prometheus parser', async () => {
    const { broker, advance } = await openBroker(engine, { limits: { maxLiteTopicsPerClient: 2 } });
    broker.createTopic('sessions', { liteTopicExpirationMs: 1_000 });
    broker.createGroup('g', { bindTopic: 'agents' });
    broker.createGroup('dl', { bindTopic: 'agents', maxReconsumeTimes: 0 });
    const g = broker.consumer({ group: 'g', clientId: 'g1' });
    const dl = broker.consumer({ group: 'dl', clientId: 'dl1' });
    await g.subscribe(['t1', 't2'], { offset: { policy: 'min' } });
    await dl.subscribe(['t2'], { offset: { policy: 'min' } });
    // A third lite topic is over the client's quota of two: refused, counted once.
    await expect(g.subscribe(['t3'])).rejects.toBeInstanceOf(QuotaExceededError);
    await sendMany(broker, 't1', 3);
    await sendMany(broker, 't2', 1);
    await broker.send('sessions', { liteTopic: 'short', body: 'x' });

    // g: four delivered, three acked, one left to time out and come back, then acked.
    const first = await g.pop({ maxNum: 32, invisibleTimeMs: 1_000 });
    expect(first).toHaveLength(4);
    const late = first.find((m) => m.liteTopic === 't2');
    for (const m of first) if (m !== late) await g.ack(m);
    advance(1_000);
    const again = await g.pop({ maxNum: 32 });
    expect(again.map((m) => [m.liteTopic, m.reconsumeTimes])).toEqual([['t2', 1]]);
    await g.ack(again[0] as (typeof again)[0]);
    // dl: its one message is delivered once; at maxReconsumeTimes 0 its next delivery is a dead letter.
    expect(await dl.pop({ invisibleTimeMs: 100 })).toHaveLength(1);
    advance(100);
    expect(await dl.pop()).toEqual([]);
    await broker.runMaintenance(); // lets the dead-letter move finish
    await expect.poll(() => broker.readDeadLetters('dl').length).toBe(1);
    // The idle lite topic of `sessions` expires.
    advance(1_000);
    await broker.runMaintenance();

    const metrics = broker.metrics();
    expect(metrics.topics).toEqual([
      { topic: 'agents', sent: 4, expired: 0, liteTopics: 2 },
      { topic: 'sessions', sent: 1, expired: 1, liteTopics: 0 },
    ]);
    const byGroup = Object.fromEntries(metrics.groups.map((m) => [m.group, m]));
    expect(byGroup.g).toEqual({
      group: 'g',
      topic: 'agents',
      delivered: 5,
      redelivered: 1,
      acked: 4,
      deadLettered: 0,
      lag: 0,
      inFlight: 0,
      clients: 1,
    });
    expect(byGroup.dl).toMatchObject({ delivered: 1, redelivered: 0, acked: 0, deadLettered: 1, lag: 0 });
    expect(metrics.quotaRefusals).toEqual({ maxLiteTopicsPerClient: 1 });
    // Five first deliveries (g: four, dl: one) timed from store to POP on the manual clock.
    expect(metrics.sendToPopLatency.count).toBe(5);

    const text = broker.metricsText();
    for (const line of text.trimEnd().split('\n')) {
      expect(line).toMatch(/^(# (HELP|TYPE) litetopic_\w+ .+|litetopic_\w+(\{[^}]*\})? -?[\d.e+-]+)$/);
    }
    const families = parsePrometheusTextFormat(text);
    expect(families.every((f) => f.name.startsWith('litetopic_') && f.help.length > 0)).toBe(true);
    expect(sample(families, 'litetopic_messages_sent_total', { topic: 'agents' })).toBe(4);
    expect(sample(families, 'litetopic_lite_topics_expired_total', { topic: 'sessions' })).toBe(1);
    expect(sample(families, 'litetopic_messages_delivered_total', { group: 'g', topic: 'agents' })).toBe(5);
    expect(sample(families, 'litetopic_messages_redelivered_total', { group: 'g' })).toBe(1);
    expect(sample(families, 'litetopic_messages_acked_total', { group: 'g' })).toBe(4);
    expect(sample(families, 'litetopic_messages_dead_lettered_total', { group: 'dl' })).toBe(1);
    expect(sample(families, 'litetopic_quota_refusals_total', { quota: 'maxLiteTopicsPerClient' })).toBe(1);
    expect(sample(families, 'litetopic_group_clients', { group: 'dl' })).toBe(1);
    const latency = families.find((f) => f.name === 'litetopic_send_to_pop_seconds');
    expect(latency?.type).toBe('SUMMARY');
    expect(latency?.metrics[0]?.count).toBe('5');
    expect(Object.keys(latency?.metrics[0]?.quantiles ?? {})).toEqual(['0.5', '0.9', '0.99', '0.999']);
  });

  it('escapes label values as the text format requires', async () => {
    const { broker } = await openBroker(engine);
    // Names are [A-Za-z0-9_-], so nothing needs escaping today; the renderer must still be exact.
    const { renderPrometheus } = await import('../ts/broker/metrics.js');
    const text = renderPrometheus({
      topics: [{ topic: 'a"b\\c\nd', sent: 1, expired: 0, liteTopics: 0 }],
      groups: [],
      quotaRefusals: {},
      sendToPopLatency: broker.metrics().sendToPopLatency,
    });
    expect(text).toContain('litetopic_messages_sent_total{topic="a\\"b\\\\c\\nd"} 1');
    expect(parsePrometheusTextFormat(text)[0]?.metrics[0]?.labels?.topic).toBe('a"b\\c\nd');
  });

  it('publishes send, pop and ack on diagnostics channels while someone listens', async () => {
    const { broker } = await openBroker(engine);
    broker.createGroup('g', { bindTopic: 'agents' });
    const consumer = broker.consumer({ group: 'g', clientId: 'c1' });
    await consumer.subscribe(['t1']);
    const heard: string[] = [];
    const listeners = {
      'litetopic:send': (m: unknown) => heard.push(`send ${(m as { results: unknown[] }).results.length}`),
      'litetopic:pop': (m: unknown) => heard.push(`pop ${(m as { messages: unknown[] }).messages.length}`),
      'litetopic:ack': (m: unknown) => heard.push(`ack ${(m as { liteTopic: string; offset: number }).offset}`),
    };
    for (const [name, listener] of Object.entries(listeners)) subscribe(name, listener);
    try {
      await sendMany(broker, 't1', 2);
      for (const m of await consumer.pop({ maxNum: 32 })) await consumer.ack(m);
    } finally {
      for (const [name, listener] of Object.entries(listeners)) unsubscribe(name, listener);
    }
    await sendMany(broker, 't1', 1); // nobody listens any more
    expect(heard).toEqual(['send 2', 'pop 2', 'ack 0', 'ack 1']);
  });
});

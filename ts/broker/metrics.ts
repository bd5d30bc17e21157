/**
 * What the broker counts: messages sent per parent topic; delivered, redelivered, acked and
 * dead-lettered per group; lite topics expired per parent topic; calls refused by a quota, per quota;
 * and the time from a message's store to its first POP, as a histogram (`perf_hooks`). Counting is
 * a map increment on paths that already do far more; gauges (lag, in flight, lite topics, clients)
 * are read from the broker's state when asked, never kept up to date.
 *
 * `renderPrometheus` writes a snapshot in the Prometheus text exposition format (version 0.0.4):
 * `litetopic_` names, `# HELP` and `# TYPE` lines, `group` and `topic` labels.
 */
import { channel } from 'node:diagnostics_channel';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';

/**
 * `node:diagnostics_channel` channels a tracer can subscribe to. Each publishes after the call's
 * work is done, and only while someone subscribes: `litetopic:send` ({ topic, results }),
 * `litetopic:pop` ({ group, clientId, messages }) and `litetopic:ack` ({ group, clientId,
 * liteTopic, offset }).
 */
export const CHANNELS = {
  send: channel('litetopic:send'),
  pop: channel('litetopic:pop'),
  ack: channel('litetopic:ack'),
} as const;

/** Latency summary of a histogram, in milliseconds. */
export interface LatencySummary {
  count: number;
  minMs: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

/** Per-group figures of `broker.metrics()`. */
export interface GroupMetrics {
  group: string;
  topic: string;
  delivered: number;
  redelivered: number;
  acked: number;
  deadLettered: number;
  /** Messages stored and not yet acked by the group, over its lite topics. */
  lag: number;
  /** Messages handed out and not yet acked or back. */
  inFlight: number;
  clients: number;
}

/** Per-parent-topic figures of `broker.metrics()`. */
export interface TopicMetrics {
  topic: string;
  sent: number;
  expired: number;
  liteTopics: number;
}

/** `broker.metrics()`. */
export interface BrokerMetrics {
  topics: TopicMetrics[];
  groups: GroupMetrics[];
  /** Calls refused by a quota, by quota name (`maxLiteTopicsPerClient`, …). */
  quotaRefusals: Record<string, number>;
  /** From a message's store timestamp to the POP that first handed it out. */
  sendToPopLatency: LatencySummary;
}

interface GroupCounts {
  delivered: number;
  redelivered: number;
  acked: number;
  deadLettered: number;
}

/** Histogram resolution: values are recorded in microseconds, which keeps sub-millisecond latencies. */
const MICROS_PER_MS = 1_000;

/** The counters a broker updates as it works. */
export class Counters {
  private readonly sentByTopic = new Map<string, number>();
  private readonly expiredByTopic = new Map<string, number>();
  private readonly byGroup = new Map<string, GroupCounts>();
  private readonly refusals = new Map<string, number>();
  private readonly latency: RecordableHistogram = createHistogram();

  sent(topic: string, count: number): void {
    this.sentByTopic.set(topic, (this.sentByTopic.get(topic) ?? 0) + count);
  }

  expired(topic: string, count: number): void {
    this.expiredByTopic.set(topic, (this.expiredByTopic.get(topic) ?? 0) + count);
  }

  /** A delivery: `attempt` 0 is the first; a first delivery records its latency since the store. */
  delivered(group: string, attempt: number, latencyMs: number): void {
    const counts = this.group(group);
    counts.delivered++;
    if (attempt > 0) counts.redelivered++;
    else this.latency.record(Math.max(1, Math.round(latencyMs * MICROS_PER_MS)));
  }

  acked(group: string): void {
    this.group(group).acked++;
  }

  deadLettered(group: string): void {
    this.group(group).deadLettered++;
  }

  refused(quota: string): void {
    this.refusals.set(quota, (this.refusals.get(quota) ?? 0) + 1);
  }

  sentTo(topic: string): number {
    return this.sentByTopic.get(topic) ?? 0;
  }

  expiredIn(topic: string): number {
    return this.expiredByTopic.get(topic) ?? 0;
  }

  groupCounts(group: string): GroupCounts {
    return { ...this.group(group) };
  }

  quotaRefusals(): Record<string, number> {
    return Object.fromEntries([...this.refusals].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  latencySummary(): LatencySummary {
    const h = this.latency;
    const ms = (micros: number) => micros / MICROS_PER_MS;
    if (h.count === 0) return { count: 0, minMs: 0, meanMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0, p999Ms: 0, maxMs: 0 };
    return {
      count: h.count,
      minMs: ms(h.min),
      meanMs: ms(h.mean),
      p50Ms: ms(h.percentile(50)),
      p90Ms: ms(h.percentile(90)),
      p99Ms: ms(h.percentile(99)),
      p999Ms: ms(h.percentile(99.9)),
      maxMs: ms(h.max),
    };
  }

  private group(name: string): GroupCounts {
    let counts = this.byGroup.get(name);
    if (counts === undefined) {
      counts = { delivered: 0, redelivered: 0, acked: 0, deadLettered: 0 };
      this.byGroup.set(name, counts);
    }
    return counts;
  }
}

/** A label value escaped as the exposition format wants: backslash, double quote and newline. */
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'summary';
  samples: { labels?: Record<string, string>; value: number; suffix?: string }[];
}

function renderFamily(family: Family): string {
  const lines = [`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`];
  for (const sample of family.samples) {
    const labels = Object.entries(sample.labels ?? {});
    const text = labels.length === 0 ? '' : `{${labels.map(([k, v]) => `${k}="${label(v)}"`).join(',')}}`;
    lines.push(`${family.name}${sample.suffix ?? ''}${text} ${Number.isFinite(sample.value) ? sample.value : 0}`);
  }
  return lines.join('\n');
}

/** `metrics` in the Prometheus text exposition format, ending with a newline. */
export function renderPrometheus(metrics: BrokerMetrics): string {
  const byGroup = (pick: (g: GroupMetrics) => number) =>
    metrics.groups.map((g) => ({ labels: { group: g.group, topic: g.topic }, value: pick(g) }));
  const byTopic = (pick: (t: TopicMetrics) => number) =>
    metrics.topics.map((t) => ({ labels: { topic: t.topic }, value: pick(t) }));
  const latency = metrics.sendToPopLatency;
  const seconds = (ms: number) => ms / 1000;
  const families: Family[] = [
    {
      name: 'litetopic_messages_sent_total',
      help: 'Messages stored by send and sendBatch, per parent topic.',
      type: 'counter',
      samples: byTopic((t) => t.sent),
    },
    {
      name: 'litetopic_lite_topics_expired_total',
      help: 'Lite topics deleted by expiry, per parent topic.',
      type: 'counter',
      samples: byTopic((t) => t.expired),
    },
    {
      name: 'litetopic_lite_topics',
      help: 'Lite topics that exist, per parent topic.',
      type: 'gauge',
      samples: byTopic((t) => t.liteTopics),
    },
    {
      name: 'litetopic_messages_delivered_total',
      help: 'Messages handed out by POP, redeliveries included, per group.',
      type: 'counter',
      samples: byGroup((g) => g.delivered),
    },
    {
      name: 'litetopic_messages_redelivered_total',
      help: 'Deliveries of messages handed out before, per group.',
      type: 'counter',
      samples: byGroup((g) => g.redelivered),
    },
    {
      name: 'litetopic_messages_acked_total',
      help: 'Messages acknowledged, per group.',
      type: 'counter',
      samples: byGroup((g) => g.acked),
    },
    {
      name: 'litetopic_messages_dead_lettered_total',
      help: 'Messages moved to the dead-letter queue, per group.',
      type: 'counter',
      samples: byGroup((g) => g.deadLettered),
    },
    {
      name: 'litetopic_group_lag_messages',
      help: 'Messages stored and not yet acknowledged by the group.',
      type: 'gauge',
      samples: byGroup((g) => g.lag),
    },
    {
      name: 'litetopic_group_in_flight_messages',
      help: 'Messages handed out and not yet acknowledged or released.',
      type: 'gauge',
      samples: byGroup((g) => g.inFlight),
    },
    {
      name: 'litetopic_group_clients',
      help: 'Open consumers of the group.',
      type: 'gauge',
      samples: byGroup((g) => g.clients),
    },
    {
      name: 'litetopic_quota_refusals_total',
      help: 'Calls refused by a quota, per quota.',
      type: 'counter',
      samples: Object.entries(metrics.quotaRefusals).map(([quota, value]) => ({ labels: { quota }, value })),
    },
    {
      name: 'litetopic_send_to_pop_seconds',
      help: "Time from a message's store to the POP that first handed it out.",
      type: 'summary',
      samples: [
        { labels: { quantile: '0.5' }, value: seconds(latency.p50Ms) },
        { labels: { quantile: '0.9' }, value: seconds(latency.p90Ms) },
        { labels: { quantile: '0.99' }, value: seconds(latency.p99Ms) },
        { labels: { quantile: '0.999' }, value: seconds(latency.p999Ms) },
        { suffix: '_sum', value: seconds(latency.meanMs * latency.count) },
        { suffix: '_count', value: latency.count },
      ],
    },
  ];
  return `${families.map(renderFamily).join('\n')}\n`;
}

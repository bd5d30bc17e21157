/**
 * The seeded agent-bus workload shared by the benchmarks and the tests: topic names
 * `tenantT__agentA__sessionS[__tool[__phase]]` (3–5 segments) with Zipf-distributed tenants, agents
 * and tools, and subscriptions that are 80% exact names and 20% wildcards. The same (n, seed) always
 * yields the same output, so figures are reproducible and a failing test names its case.
 *
 * It also translates lite patterns for the peers: an exact RegExp, qlobber's syntax and MQTT's.
 */
import { format } from './lib.js';

const { seededRandom } = format;

/** A source of uniform numbers in [0, 1). */
export type Random = () => number;

/** mulberry32: tiny, fast, and good enough to drive a benchmark; not for anything secret. The demo
 * (ts/cli) uses the same generator, so it lives there. */
export function mulberry32(seed: number): Random {
  return seededRandom(seed);
}

/** The shape of the population the names are drawn from. */
export interface WorkloadShape {
  tenants: number;
  agentsPerTenant: number;
  sessionsPerAgent: number;
  tools: readonly string[];
  phases: readonly string[];
  /** Zipf exponent for tenants, agents and tools: a few are hot, most are cold. */
  zipfExponent: number;
}

/** Sized so the longest name stays under the 64-byte lite name limit. */
export const AGENT_BUS: WorkloadShape = {
  tenants: 500,
  agentsPerTenant: 64,
  sessionsPerAgent: 256,
  tools: ['search', 'browse', 'code', 'shell', 'sql', 'email', 'calendar', 'vision', 'http', 'files', 'memory', 'plan'],
  phases: ['call', 'progress', 'result', 'error'],
  zipfExponent: 1.1,
};

/** Samples ranks 0..count-1 with probability proportional to 1 / (rank + 1)^exponent. */
export function zipf(count: number, exponent: number): (random: Random) => number {
  const cumulative = new Float64Array(count);
  let total = 0;
  for (let rank = 0; rank < count; rank++) {
    total += 1 / (rank + 1) ** exponent;
    cumulative[rank] = total;
  }
  return (random) => {
    const target = random() * total;
    let low = 0;
    let high = count - 1;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((cumulative[mid] as number) <= target) low = mid + 1;
      else high = mid;
    }
    return low;
  };
}

/** One draw from the population: the five segments a name can have. */
interface Draw {
  tenant: string;
  agent: string;
  session: string;
  tool: string;
  phase: string;
}

function pick<T>(items: readonly T[], index: number): T {
  return items[index] as T;
}

function drawer(shape: WorkloadShape, random: Random): () => Draw {
  const tenant = zipf(shape.tenants, shape.zipfExponent);
  const agent = zipf(shape.agentsPerTenant, shape.zipfExponent);
  const tool = zipf(shape.tools.length, shape.zipfExponent);
  return () => ({
    tenant: `tenant${tenant(random)}`,
    agent: `agent${agent(random)}`,
    session: `session${Math.floor(random() * shape.sessionsPerAgent)}`,
    tool: pick(shape.tools, tool(random)),
    phase: pick(shape.phases, Math.floor(random() * shape.phases.length)),
  });
}

/** 3, 4 or 5 segments: plain session events, tool calls, and tool calls with a phase. */
function nameOf(draw: Draw, segments: number): string {
  const parts = [draw.tenant, draw.agent, draw.session, draw.tool, draw.phase];
  return parts.slice(0, segments).join('__');
}

function segmentCount(random: Random): number {
  const r = random();
  return r < 0.3 ? 3 : r < 0.7 ? 4 : 5;
}

/** `n` topic names (repeats included: hot tenants and agents publish more). */
export function makeTopics(n: number, seed: number, shape: WorkloadShape = AGENT_BUS): string[] {
  const random = mulberry32(seed);
  const draw = drawer(shape, random);
  const topics: string[] = [];
  for (let i = 0; i < n; i++) topics.push(nameOf(draw(), segmentCount(random)));
  return topics;
}

/** The wildcard shapes of the workload, filled in from one draw. */
const WILDCARD_SHAPES: readonly ((d: Draw) => string)[] = [
  (d) => `${d.tenant}__${d.agent}__${d.session}__*`,
  (d) => `${d.tenant}__${d.agent}__**`,
  (d) => `${d.tenant}__${d.agent}__*__${d.tool}`,
  (d) => `${d.tenant}__**`,
  (d) => `*__*__*__${d.tool}`,
];

export interface Subscription {
  pattern: string;
  id: number;
}

/** The fraction of subscriptions that name one topic exactly. */
export const EXACT_SHARE = 0.8;

/**
 * `n` distinct (pattern, id) subscriptions: 80% exact names, 20% wildcards in the five shapes.
 * Ids stand for subscribers, about two patterns each, so a topic can match one subscriber through
 * several patterns and the indexes must deduplicate.
 */
export function makeSubscriptions(n: number, seed: number, shape: WorkloadShape = AGENT_BUS): Subscription[] {
  const random = mulberry32(seed);
  const draw = drawer(shape, random);
  const subscribers = Math.max(1, Math.ceil(n / 2));
  const seen = new Set<string>();
  const subscriptions: Subscription[] = [];
  while (subscriptions.length < n) {
    const d = draw();
    const pattern =
      random() < EXACT_SHARE
        ? nameOf(d, segmentCount(random))
        : pick(WILDCARD_SHAPES, Math.floor(random() * WILDCARD_SHAPES.length))(d);
    const id = Math.floor(random() * subscribers);
    const key = `${pattern} ${id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    subscriptions.push({ pattern, id });
  }
  return subscriptions;
}

/**
 * Topics that `pattern` matches: workload names with the pattern's literal segments written over
 * theirs. Used to give every single-pattern benchmark a batch with real hits, not only misses.
 */
export function makeMatchingTopics(
  pattern: string,
  n: number,
  seed: number,
  shape: WorkloadShape = AGENT_BUS,
): string[] {
  const parts = pattern.split('__');
  const trailing = parts[parts.length - 1] === '**';
  const fixed = trailing ? parts.slice(0, -1) : parts;
  const random = mulberry32(seed);
  const draw = drawer(shape, random);
  const topics: string[] = [];
  for (let i = 0; i < n; i++) {
    const d = draw();
    const segments = [d.tenant, d.agent, d.session, d.tool, d.phase];
    // `**` needs at least one more segment; workload names have 3 to 5.
    const shortest = Math.max(3, fixed.length + 1);
    const longest = Math.max(5, shortest);
    const length = trailing ? shortest + Math.floor(random() * (longest - shortest + 1)) : fixed.length;
    // Patterns longer than workload names get filler segments.
    while (segments.length < length) segments.push(d.phase);
    fixed.forEach((part, at) => {
      if (part !== '*') segments[at] = part;
    });
    topics.push(segments.slice(0, length).join('__'));
  }
  return topics;
}

/** One lite segment: no `__` inside, and a `_` never directly before a separator (lite splits left to right). */
const SEGMENT = '(?:[A-Za-z0-9-]|_(?!_))*';

function escapeLiteral(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * An exact RegExp for a valid lite pattern: `*` is one segment (possibly empty), `**` one or more
 * trailing segments, literals compare exactly, and the topic must be non-empty `[A-Za-z0-9_-]`.
 * The lookahead in SEGMENT reproduces left-to-right splitting (`a___b` is `a`, `_b`).
 */
export function toRegExp(pattern: string): RegExp {
  const body = pattern
    .split('__')
    .map((part) => (part === '*' ? SEGMENT : part === '**' ? `${SEGMENT}(?:__${SEGMENT})*` : escapeLiteral(part)))
    .join('__');
  return new RegExp(`^(?!$)${body}$`);
}

/** qlobber syntax (separator `__`, `*` one word, `#` zero or more words): `**` becomes `*__#`. */
export function toQlobber(pattern: string): string {
  return pattern === '**' ? '*__#' : pattern.endsWith('__**') ? `${pattern.slice(0, -2)}*__#` : pattern;
}

/** qlobber's options for the translation above; `*` must match an empty segment as lite's does. */
export const QLOBBER_OPTIONS = {
  separator: '__',
  wildcard_one: '*',
  wildcard_some: '#',
  match_empty_levels: true,
} as const;

/**
 * MQTT syntax for mqtt-match: `/` separators, `+`, `#`. Exact only for names without empty segments
 * or `/` (true of the workload); MQTT's `#` also matches zero levels, which 3+ segment names never need.
 */
export function toMqttFilter(pattern: string): string {
  return pattern
    .split('__')
    .map((part) => (part === '*' ? '+' : part === '**' ? '#' : part))
    .join('/');
}

export function toMqttTopic(topic: string): string {
  return topic.split('__').join('/');
}

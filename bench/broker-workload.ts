/**
 * The broker suite's seeded agent-bus traffic: 100,000 distinct lite topics `tenantT__agentA__sessionS`
 * (Zipf tenants and agents, so a few tenants own most sessions), 5% of them a session's error channel
 * `tenantT__agentA__sessionS__error`, and a message sequence in which sessions start throughout the
 * first `openWithin` messages (message i < openWithin opens a new lite topic whenever
 * i·topics/openWithin crosses a whole number, otherwise it goes to one of the lite topics opened so
 * far, uniformly; later messages go to any lite topic, uniformly), so every lite topic gets at least
 * one message. The throughput runs spread creation over the whole run; the latency runs open every
 * lite topic first (the warm-up) and then measure traffic over all of them.
 *
 * Each body carries the message's sequence number in its first four bytes: consumers check with it
 * that every message reaches every group that should get it, exactly once and in FIFO order, and the
 * latency run looks up its send time.
 */
import { mulberry32, zipf } from './workload.js';

export const PARENT_TOPIC = 'agents';
/** The auditor's patterns: everything of the second-hottest tenant, and every error channel. */
export const AUDITOR_PATTERNS = ['tenant1__**', '*__*__*__error'] as const;

const TENANTS = 200;
const AGENTS_PER_TENANT = 64;
const SESSIONS_PER_AGENT = 1024;
const ZIPF_EXPONENT = 1.1;
/** Share of lite topics that are error channels (matched by `*__*__*__error`). */
const ERROR_SHARE = 0.05;

export interface BrokerWorkload {
  seed: number;
  /** The distinct lite topic names, in creation order. */
  names: string[];
  /** Whether the auditor's patterns match each name (decided here by plain string tests, not by litetopic). */
  audited: Uint8Array;
  /** Lite topic index of each message. */
  topicOf: Uint32Array;
  /** Messages the auditor must receive. */
  auditedMessages: number;
  bodyBytes: number;
  /** Filler the bodies are cut from (after the sequence number). */
  filler: Uint8Array;
}

/** The independent check of the auditor's patterns: `tenant1__**` and `*__*__*__error` in plain code. */
function isAudited(name: string): boolean {
  const segments = name.split('__');
  return (segments[0] === 'tenant1' && segments.length >= 2) || (segments.length === 4 && segments[3] === 'error');
}

function makeNames(count: number, seed: number): string[] {
  const random = mulberry32(seed);
  const tenant = zipf(TENANTS, ZIPF_EXPONENT);
  const agent = zipf(AGENTS_PER_TENANT, ZIPF_EXPONENT);
  const seen = new Set<string>();
  const names: string[] = [];
  while (names.length < count) {
    const session = Math.floor(random() * SESSIONS_PER_AGENT);
    let name = `tenant${tenant(random)}__agent${agent(random)}__session${session}`;
    if (random() < ERROR_SHARE) name += '__error';
    if (seen.has(name)) continue;
    seen.add(name);
    names.push(name);
  }
  return names;
}

/** `messages` messages over `topics` lite topics, all opened within the first `openWithin`; derived from `seed`. */
export function makeBrokerWorkload(
  messages: number,
  topics: number,
  openWithin: number,
  bodyBytes: number,
  seed: number,
): BrokerWorkload {
  if (openWithin < topics || openWithin > messages) {
    throw new Error(`cannot open ${topics} lite topics within ${openWithin} of ${messages} messages`);
  }
  const names = makeNames(topics, seed);
  const audited = Uint8Array.from(names, (name) => (isAudited(name) ? 1 : 0));
  const random = mulberry32(seed + 1);
  const topicOf = new Uint32Array(messages);
  let opened = 0;
  let auditedMessages = 0;
  for (let i = 0; i < messages; i++) {
    const due = i < openWithin ? Math.floor((i * topics) / openWithin) + 1 : topics;
    const topic = due > opened ? opened++ : Math.floor(random() * opened);
    topicOf[i] = topic;
    auditedMessages += audited[topic] as number;
  }
  const filler = new Uint8Array(bodyBytes);
  for (let i = 0; i < bodyBytes; i++) filler[i] = 32 + Math.floor(random() * 95);
  return { seed, names, audited, topicOf, auditedMessages, bodyBytes, filler };
}

/** Messages `from`..`from + count - 1`, ready for `sendBatch`; each body starts with its sequence number. */
export function messagesOf(work: BrokerWorkload, from: number, count: number): { liteTopic: string; body: Buffer }[] {
  const out = new Array<{ liteTopic: string; body: Buffer }>(count);
  for (let i = 0; i < count; i++) {
    const seq = from + i;
    const body = Buffer.allocUnsafe(work.bodyBytes);
    body.set(work.filler);
    body.writeUInt32LE(seq, 0);
    out[i] = { liteTopic: work.names[work.topicOf[seq] as number] as string, body };
  }
  return out;
}

/** The sequence number a body carries. */
export function sequenceOf(body: Buffer): number {
  return body.readUInt32LE(0);
}

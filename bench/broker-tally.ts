/**
 * What each consumer group of a broker run received, checked message by message: the right lite
 * topic for the body's sequence number, a message the group should get at all (the auditor only
 * the ones its patterns match), each exactly once, in offset order per lite topic with no gap, and
 * never redelivered. A run's rate is reported only when every group's tally is clean and complete.
 */
import type { PoppedMessage } from '../ts/index.js';
import { type BrokerWorkload, sequenceOf } from './broker-workload.js';

/** Latency recording: send times by sequence number, from `measureFrom` on (earlier ones are warm-up). */
export interface LatencyProbe {
  sentAt: Float64Array;
  /** When the pace meant to send `seq`, ms (performance.now()). */
  scheduledAt: (seq: number) => number;
  measureFrom: number;
}

export class GroupTally {
  /** Messages this group must receive. */
  readonly expected: number;
  delivered = 0;
  acked = 0;
  /** performance.now() when `acked` reached `expected`. */
  doneAt = Number.NaN;
  /** Send-to-pop latency per measured delivery, ms (the paced run). */
  readonly latencies: Float64Array;
  /** Same, counted from the time the pacing schedule meant to send it (shows producer lag too). */
  readonly scheduleLatencies: Float64Array;
  private measured = 0;
  private readonly seen: Uint8Array;
  private readonly nextOffset: Int32Array;
  private readonly problems: string[] = [];
  private problemCount = 0;

  constructor(
    readonly group: string,
    private readonly work: BrokerWorkload,
    /** Whether a message of lite topic index `topic` is for this group. */
    private readonly wants: (topic: number) => boolean,
    private readonly probe: LatencyProbe | undefined,
  ) {
    const { topicOf, names } = work;
    this.expected = this.expectedBelow(topicOf.length);
    this.seen = new Uint8Array(topicOf.length);
    this.nextOffset = new Int32Array(names.length);
    const measured = probe === undefined ? 0 : this.expected - this.expectedBelow(probe.measureFrom);
    this.latencies = new Float64Array(measured);
    this.scheduleLatencies = new Float64Array(measured);
  }

  /** Messages below sequence number `limit` this group must receive. */
  expectedBelow(limit: number): number {
    let count = 0;
    for (let seq = 0; seq < limit; seq++) if (this.wants(this.work.topicOf[seq] as number)) count++;
    return count;
  }

  /** Checks one batch popped at `poppedAt` (performance.now()). */
  record(batch: readonly PoppedMessage[], poppedAt: number): void {
    const { topicOf, names } = this.work;
    for (const message of batch) {
      const seq = sequenceOf(message.body);
      const topic = topicOf[seq];
      if (topic === undefined || message.liteTopic !== names[topic]) {
        this.problem(`sequence ${seq} arrived from lite topic ${message.liteTopic}`);
        continue;
      }
      if (!this.wants(topic)) this.problem(`${message.liteTopic} is not one of this group's lite topics`);
      if (this.seen[seq] === 1) this.problem(`sequence ${seq} delivered twice`);
      this.seen[seq] = 1;
      if (message.offset !== this.nextOffset[topic]) {
        this.problem(`${message.liteTopic}: offset ${message.offset}, expected ${this.nextOffset[topic]} (FIFO)`);
      }
      this.nextOffset[topic] = message.offset + 1;
      if (message.reconsumeTimes !== 0) this.problem(`sequence ${seq} redelivered (${message.reconsumeTimes})`);
      const probe = this.probe;
      if (probe !== undefined && seq >= probe.measureFrom && this.measured < this.latencies.length) {
        this.latencies[this.measured] = poppedAt - (probe.sentAt[seq] as number);
        this.scheduleLatencies[this.measured++] = poppedAt - probe.scheduledAt(seq);
      }
      this.delivered++;
    }
  }

  acknowledged(count: number, at: number): void {
    this.acked += count;
    if (this.acked >= this.expected && Number.isNaN(this.doneAt)) this.doneAt = at;
  }

  get complete(): boolean {
    return this.acked >= this.expected;
  }

  /** Throws unless every expected message was delivered and acked exactly once, in order. */
  verify(): void {
    if (this.delivered !== this.expected || this.acked !== this.expected) {
      this.problem(`delivered ${this.delivered} and acked ${this.acked} of ${this.expected}`);
    }
    if (this.problemCount > 0) {
      throw new Error(`group ${this.group}: ${this.problemCount} problems, first: ${this.problems.join('; ')}`);
    }
  }

  private problem(text: string): void {
    this.problemCount++;
    if (this.problems.length < 3) this.problems.push(text);
  }
}

/**
 * The naive commit log the engines are compared with: a Map from LMQ name to its minimum offset and
 * the list of bodies (and keys) at each offset. No files, no positions, no checksums.
 */
export interface ModelMessage {
  offset: number;
  body: string;
  key: string | undefined;
}

export class ModelLog {
  private readonly queues = new Map<string, { min: number; messages: ModelMessage[] }>();

  append(lmqs: readonly string[], body: string, key: string | undefined): number[] {
    return lmqs.map((lmq) => {
      let queue = this.queues.get(lmq);
      if (queue === undefined) {
        queue = { min: 0, messages: [] };
        this.queues.set(lmq, queue);
      }
      const offset = queue.min + queue.messages.length;
      queue.messages.push({ offset, body, key });
      return offset;
    });
  }

  delete(lmq: string): boolean {
    return this.queues.delete(lmq);
  }

  read(lmq: string, from: number, max: number): ModelMessage[] {
    const queue = this.queues.get(lmq);
    if (queue === undefined) return [];
    const start = Math.max(from, queue.min) - queue.min;
    return queue.messages.slice(start, start + max);
  }

  maxOffset(lmq: string): number {
    const queue = this.queues.get(lmq);
    return queue === undefined ? 0 : queue.min + queue.messages.length;
  }

  /** Names in UTF-8 byte order (code point order), the order `listLmqs` promises. */
  names(): string[] {
    return [...this.queues.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  }
}

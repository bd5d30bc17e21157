import type { BodyBatch } from '../ts/index.js';

/** The body a writer gives message `n` of `lmq`: a reader can check it knowing only the two. */
export function bodyFor(lmq: string, n: number, bytes = 40): Buffer {
  const seed = `${lmq}#${n}|`;
  return Buffer.from(seed.repeat(Math.ceil(bytes / seed.length)).slice(0, bytes));
}

/** A body-only batch of `records` ([index into `lmqs`, body]) over the names `lmqs`. */
export function bodyBatch(
  lmqs: readonly string[],
  records: readonly (readonly [number, string | Buffer])[],
): BodyBatch {
  const bodies = records.map(([, body]) => Buffer.from(body));
  let end = 0;
  return {
    lmqs,
    lmqIndex: Uint32Array.from(records, ([lmq]) => lmq),
    bodies: Buffer.concat(bodies),
    bodyEnds: Uint32Array.from(bodies, (body) => {
      end += body.length;
      return end;
    }),
  };
}

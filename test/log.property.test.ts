/**
 * Model-based tests of the commit log: random sequences of appends (several LMQs per record, keys or
 * none), body-only appends (`appendBodies`), LMQ deletions, reads, checkpoints and reopenings — sometimes by the other engine — run
 * against each engine and the naive model in test/model/log.ts; after every step the engine must
 * answer like the model.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CommitLog, EngineName } from '../ts/index.js';
import { ENGINES } from './engines.js';
import { openLog, tempDir } from './log-helpers.js';
import { ModelLog } from './model/log.js';

const LMQS = ['a', 'b', 'c', 'd', 'tenant1__agent1', 'ü', '\u{1F600}'];
const lmqName = fc.constantFrom(...LMQS);

const command = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      records: fc.array(
        fc.record({
          lmqs: fc.uniqueArray(lmqName, { minLength: 1, maxLength: 3 }),
          body: fc.string({ maxLength: 300 }),
          key: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
        }),
        { minLength: 1, maxLength: 6 },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('bodies' as const),
      records: fc.array(fc.record({ lmq: fc.nat(LMQS.length - 1), body: fc.string({ maxLength: 300 }) }), {
        minLength: 1,
        maxLength: 8,
      }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), lmq: lmqName }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reopen' as const), swap: fc.boolean() }) },
);

function expectSame(log: CommitLog, model: ModelLog): void {
  expect(log.listLmqs().lmqs).toEqual(model.names());
  for (const lmq of LMQS) {
    expect(log.maxOffset(lmq)).toBe(model.maxOffset(lmq));
    const got = log.read(lmq, 0, 1000).map((m) => ({ offset: m.offset, body: m.body.toString(), key: m.key }));
    expect(got).toEqual(model.read(lmq, 0, 1000));
  }
}

describe.each(ENGINES)('%s engine', (engine) => {
  const other: EngineName = ENGINES.length > 1 ? (engine === 'native' ? 'js' : 'native') : engine;

  it('answers like the model under random appends, deletions and reopenings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 25 }), async (commands) => {
        const dir = tempDir();
        const model = new ModelLog();
        let current = engine;
        let log = await openLog(dir, current, { segmentBytes: 4096, checkpointBytes: 0 });
        for (const step of commands) {
          if (step.kind === 'append') {
            const results = await log.append(step.records.map((r) => ({ lmqs: r.lmqs, body: r.body, key: r.key })));
            step.records.forEach((r, i) => {
              expect(results[i]?.offsets).toEqual(model.append(r.lmqs, r.body, r.key));
            });
          } else if (step.kind === 'bodies') {
            // The same table of names every time, as a producer would pass it.
            const bodies = step.records.map((r) => Buffer.from(r.body));
            const result = await log.appendBodies({
              lmqs: LMQS,
              lmqIndex: Uint32Array.from(step.records, (r) => r.lmq),
              bodies: Buffer.concat(bodies),
              bodyEnds: Uint32Array.from(
                bodies,
                (
                  (end) => (body: Buffer) =>
                    (end += body.length)
                )(0),
              ),
            });
            step.records.forEach((r, i) => {
              expect([result.offsets[i]]).toEqual(model.append([LMQS[r.lmq] as string], r.body, undefined));
            });
          } else if (step.kind === 'delete') {
            expect(await log.deleteLmq(step.lmq)).toBe(model.delete(step.lmq));
          } else if (step.kind === 'checkpoint') {
            await log.checkpoint();
          } else {
            await log.close();
            if (step.swap) current = current === engine ? other : engine;
            log = await openLog(dir, current, { segmentBytes: 4096, checkpointBytes: 0 });
          }
          expectSame(log, model);
        }
        await log.close();
      }),
      { numRuns: 40 },
    );
  });
});

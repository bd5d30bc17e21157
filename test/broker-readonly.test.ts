/**
 * `Broker.open({ readOnly: true })` on every engine: it answers admin queries, metrics and dead-letter
 * reads from a directory without changing a byte of it (a live broker's included), and refuses every
 * call that would change state with `READ_ONLY`.
 */
import { describe, expect, it } from 'vitest';
import { Broker, ReadOnlyError } from '../ts/index.js';
import { sendMany, tempDir } from './broker-helpers.js';
import { ENGINES } from './engines.js';
import { directoryDigest } from './log-helpers.js';

/** A directory with a topic, a group with progress (two of five acked) and one in-flight message. */
async function written(engine: (typeof ENGINES)[number]): Promise<string> {
  const dir = tempDir();
  const broker = await Broker.open({ dir, engine, flush: 'sync' });
  broker.createTopic('agents');
  broker.createGroup('g', { bindTopic: 'agents' });
  const consumer = broker.consumer({ group: 'g', clientId: 'c1' });
  await consumer.subscribe(['t1'], { offset: { policy: 'min' } });
  await sendMany(broker, 't1', 5);
  const batch = await consumer.pop({ maxNum: 3 });
  await consumer.ack(batch[0] as (typeof batch)[0]);
  await consumer.ack(batch[1] as (typeof batch)[0]);
  await broker.close();
  return dir;
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('answers queries from a directory and changes nothing in it', async () => {
    const dir = await written(engine);
    const before = directoryDigest(dir);
    const broker = await Broker.open({ dir, engine, readOnly: true });
    try {
      expect(broker.readOnly).toBe(true);
      expect(broker.admin.groupInfo('g')).toMatchObject({ group: 'g', totalLag: 3, liteTopics: 1 });
      expect(broker.admin.liteTopicInfo('agents', 't1')).toMatchObject({ minOffset: 0, maxOffset: 5 });
      expect(broker.metrics().groups).toEqual([expect.objectContaining({ group: 'g', lag: 3 })]);
      expect(broker.readDeadLetters('g')).toEqual([]);
    } finally {
      await broker.close();
    }
    expect(directoryDigest(dir)).toEqual(before);
  });

  it('refuses every change with READ_ONLY', async () => {
    const dir = await written(engine);
    const before = directoryDigest(dir);
    const broker = await Broker.open({ dir, engine, readOnly: true });
    try {
      const refusals: (() => unknown)[] = [
        () => broker.createTopic('other'),
        () => broker.createGroup('h', { bindTopic: 'agents' }),
        () => broker.send('agents', { liteTopic: 't1', body: 'x' }),
        () => broker.sendBatch('agents', [{ liteTopic: 't2', body: 'x' }]),
        () => broker.consumer({ group: 'g', clientId: 'c2' }),
        () => broker.runMaintenance(),
        () => broker.resendDeadLetter('g', 0),
      ];
      for (const refusal of refusals) {
        let outcome: unknown;
        try {
          outcome = await refusal();
        } catch (error) {
          outcome = error;
        }
        expect(outcome).toBeInstanceOf(ReadOnlyError);
        expect((outcome as ReadOnlyError).code).toBe('READ_ONLY');
      }
    } finally {
      await broker.close();
    }
    expect(directoryDigest(dir)).toEqual(before);
  });

  it('reads beside a live broker that holds the directory', async () => {
    const dir = tempDir();
    const live = await Broker.open({ dir, engine, flush: 'sync' });
    try {
      live.createTopic('agents');
      live.createGroup('g', { bindTopic: 'agents' });
      await sendMany(live, 't1', 3);
      const reader = await Broker.open({ dir, engine, readOnly: true });
      try {
        expect(reader.admin.topicInfo('agents')).toMatchObject({ liteTopics: 1, groups: ['g'] });
      } finally {
        await reader.close();
      }
      // The live broker is undisturbed.
      await sendMany(live, 't1', 1, 3);
      expect(live.admin.liteTopicInfo('agents', 't1')?.maxOffset).toBe(4);
    } finally {
      await live.close();
    }
  });

  it('rejects readOnly without a directory, and with repair', async () => {
    await expect(Broker.open({ engine, readOnly: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(Broker.open({ dir: tempDir(), engine, readOnly: true, repair: true })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

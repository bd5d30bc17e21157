// Durable state across a restart. Run with `node examples/durable.mjs`.
//
// With a directory, messages live in a memory-mapped commit log and the broker's topics, groups,
// offsets and in-flight POPs in a journal beside it. `flush: 'sync'` makes every call durable before
// it resolves. After a restart (or a crash) the group goes on where it stopped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from 'litetopic';

const dir = mkdtempSync(join(tmpdir(), 'litetopic-example-'));
try {
  let broker = await Broker.open({ dir, flush: 'sync' });
  broker.createTopic('devices');
  broker.createGroup('ingest', { bindTopic: 'devices' });
  let consumer = broker.consumer({ group: 'ingest', clientId: 'ingest-1' });
  await consumer.subscribe(['sensor7'], { offset: { policy: 'min' } });
  await broker.sendBatch(
    'devices',
    [1, 2, 3, 4].map((n) => ({ liteTopic: 'sensor7', body: `reading ${n}` })),
  );
  const [first, second] = await consumer.pop({ maxNum: 2 });
  await consumer.ack(first);
  await consumer.ack(second);
  await broker.close();
  console.log('acked readings 1 and 2, then restarted');

  broker = await Broker.open({ dir, flush: 'sync' }); // topics and groups are persisted
  consumer = broker.consumer({ group: 'ingest', clientId: 'ingest-1' });
  await consumer.subscribe(['sensor7']);
  const rest = await consumer.pop({ maxNum: 32 });
  console.log(`after the restart: ${rest.map((m) => m.body.toString()).join(', ')}`);
  for (const message of rest) await consumer.ack(message);
  await broker.close();
  if (rest.length !== 2) process.exit(1);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// A key-shared group: one hot lite topic spread over several clients by message key. Run with
// `node examples/key-shared.mjs`.
//
// Messages carry a key; the group cuts the key space into buckets and gives each client some of
// them. Messages of one key go to one client at a time, in order; different keys run in parallel.
import { Broker } from 'litetopic';

const broker = await Broker.open();
broker.createTopic('orders');
broker.createGroup('billing', { bindTopic: 'orders', keyShared: { buckets: 64 } });
const clients = ['billing-1', 'billing-2', 'billing-3'].map((clientId) =>
  broker.consumer({ group: 'billing', clientId }),
);
for (const client of clients) await client.subscribe(['shop1__orders']);

const customers = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
const messages = [];
for (let step = 1; step <= 3; step++) {
  for (const key of customers) messages.push({ liteTopic: 'shop1__orders', key, body: `${key} step ${step}` });
}
await broker.sendBatch('orders', messages);

const byKey = new Map();
const byClient = new Map();
let received = 0;
while (received < messages.length) {
  for (const client of clients) {
    for (const message of await client.pop({ maxNum: 32, waitMs: 50 })) {
      byKey.set(message.key, [...(byKey.get(message.key) ?? []), message.body.toString()]);
      byClient.set(client.clientId, (byClient.get(client.clientId) ?? 0) + 1);
      await client.ack(message);
      received++;
    }
  }
}
for (const [key, steps] of byKey) console.log(`${key}: ${steps.join(' -> ')}`);
console.log(`per client: ${[...byClient].map(([id, n]) => `${id} ${n}`).join(', ')}`);
await broker.close();

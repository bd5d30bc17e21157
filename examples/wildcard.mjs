// Wildcard subscriptions. Run with `node examples/wildcard.mjs`.
//
// In a wildcard group a client subscribes to patterns over lite topic names: `*` is one segment
// (segments are separated by `__`), `**` one or more trailing segments. It receives the existing
// lite topics that match, and every new one from its first message on.
import { Broker } from 'litetopic';

const broker = await Broker.open();
broker.createTopic('agents');
broker.createGroup('auditor', { bindTopic: 'agents', wildcard: true });
const auditor = broker.consumer({ group: 'auditor', clientId: 'auditor-1' });
await auditor.subscribe(['tenant1__**', '*__*__error']);

const sends = [
  ['tenant1__agent1', 'tenant1, agent 1'],
  ['tenant1__agent2__session9', 'tenant1, deeper'],
  ['tenant2__agent1', 'tenant2: not for the auditor'],
  ['tenant2__agent1__error', 'an error anywhere'],
];
for (const [liteTopic, body] of sends) await broker.send('agents', { liteTopic, body });

const got = [];
for (;;) {
  const batch = await auditor.pop({ maxNum: 32, waitMs: 200 });
  if (batch.length === 0) break;
  for (const message of batch) {
    got.push(message.liteTopic);
    await auditor.ack(message);
  }
}
console.log(`the auditor holds ${auditor.liteTopics.sort().join(', ')}`);
console.log(`and received ${got.sort().join(', ')}`);
await broker.close();
if (got.length !== 3) process.exit(1);

// A POP loop: the lowest-level way to consume. Run with `node examples/pop-loop.mjs`.
//
// A parent topic holds one lite topic per conversation; a shared group reads them. Each POP returns
// up to 32 messages across the client's lite topics and hides them for the invisible time; an ack
// moves the group past them. Messages of one lite topic come out in order (FIFO).
import { Broker } from 'litetopic';

const broker = await Broker.open(); // in memory; pass { dir: './data' } to keep the messages on disk
broker.createTopic('chat');
broker.createGroup('assistants', { bindTopic: 'chat' });

const consumer = broker.consumer({ group: 'assistants', clientId: 'assistant-1' });
const conversations = ['user1__conv1', 'user1__conv2', 'user2__conv1'];
await consumer.subscribe(conversations);

for (const liteTopic of conversations) {
  await broker.sendBatch('chat', [
    { liteTopic, body: `${liteTopic}: hello` },
    { liteTopic, body: `${liteTopic}: how are you?` },
  ]);
}

let received = 0;
while (received < conversations.length * 2) {
  // Long poll: waits up to a second for messages when none are ready.
  const batch = await consumer.pop({ maxNum: 32, invisibleTimeMs: 30_000, waitMs: 1_000 });
  for (const message of batch) {
    console.log(`${message.liteTopic} #${message.offset}: ${message.body.toString()}`);
    await consumer.ack(message);
    received++;
  }
}

await broker.close();
console.log(`received and acked ${received} messages`);

// Handler-style consumption with graceful shutdown. Run with `node examples/run-handler.mjs` and
// press Ctrl-C (or pass `--seconds n` to stop on its own).
//
// `consumer.run` calls the handler for each message, up to `concurrency` at once but never two of one
// lite topic, so each lite topic is handled in order. A handler that resolves acks its message; one
// that throws has it delivered again after a backoff. On SIGINT, `stop()` lets running handlers
// finish and gives back what was fetched but not started, then the broker closes.
import { Broker } from 'litetopic';

const secondsArg = process.argv.indexOf('--seconds');
const seconds = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : undefined;

const broker = await Broker.open();
broker.createTopic('jobs');
broker.createGroup('workers', { bindTopic: 'jobs' });
const consumer = broker.consumer({ group: 'workers', clientId: 'worker-1' });
await consumer.subscribe(['tenant1__reports', 'tenant1__emails', 'tenant2__reports']);

let handled = 0;
let failedOnce = false;
const running = consumer.run(
  async (message) => {
    // One job fails the first time it is tried, to show the retry.
    if (!failedOnce && message.body.toString() === 'job 3') {
      failedOnce = true;
      throw new Error('temporary failure');
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
    handled++;
  },
  {
    concurrency: 4,
    retry: { initialDelayMs: 50, maxDelayMs: 1_000 },
    onError: (error, message) => console.log(`retrying ${message?.body.toString()}: ${error.message}`),
  },
);

// A producer that keeps sending until shutdown.
let sent = 0;
const producer = setInterval(() => {
  const liteTopic = ['tenant1__reports', 'tenant1__emails', 'tenant2__reports'][sent % 3];
  broker.send('jobs', { liteTopic, body: `job ${sent++}` }).catch(() => undefined);
}, 2);

async function shutdown() {
  clearInterval(producer);
  await running.stop();
  const info = broker.admin.groupInfo('workers');
  await broker.close();
  console.log(`stopped cleanly: sent ${sent}, handled ${handled}, left for the next run ${info.totalLag}`);
  process.exit(0);
}
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
console.log('running; press Ctrl-C to stop');
if (seconds !== undefined) setTimeout(shutdown, seconds * 1000);

/**
 * Holds a commit log open until killed, for test/cli.test.ts: `cli-lock-holder.ts <dir>`. Appends one
 * lite-topic record, prints `ready`, then waits.
 */
import { CommitLog } from '../ts/index.js';

async function main(): Promise<void> {
  const log = await CommitLog.open(process.argv[2] as string);
  await log.append([{ lmqs: ['%LMQ%$agents$tenant1__agent1__session1'], body: 'held' }]);
  process.stdout.write('ready\n');
  setInterval(() => undefined, 1 << 30);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

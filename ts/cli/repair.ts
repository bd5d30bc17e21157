/**
 * `litetopic repair <dir>`: the explicit repair a normal open never does. It opens the directory for
 * writing with `repair: true`, so recovery cuts damaged records (which an open refuses with
 * `LOG_CORRUPT`) and what follows them, as it cuts a torn tail, then reports what it cut. `inspect`
 * shows beforehand what a repair would cut.
 */
import { resolve } from 'node:path';
import { Broker, CommitLog, type EngineName, LogLockedError } from '../index.js';
import { CommandError, EXIT, flag, type ParsedArgs, text } from './args.js';
import { recoveryText } from './inspect.js';
import { layoutOf, lockedError } from './inspect-read.js';
import type { Output } from './output.js';

export const REPAIR_OPTIONS = {
  json: { kind: 'flag' },
  engine: { kind: 'string', choices: ['native', 'js'] },
} as const;

export const REPAIR_HELP = `usage: litetopic repair <dir> [--json] [--engine native|js]

Opens a data directory for writing with repair: recovery cuts damaged records, which a normal open
refuses (LOG_CORRUPT), and everything after them, as it cuts a torn tail after a crash. What
follows the damage is lost. Run "litetopic inspect <dir>" first: it says what a repair would cut
without changing anything. Keep a copy of the directory if its contents matter.

For a broker directory the broker is then opened over the repaired log, and closed again. The
broker's own journal is not cut: a damaged journal is still refused (LOG_CORRUPT naming its file
and position), and truncating that file at the position lets the broker open with the state
recorded before it.

options:
  --json         what recovery did, as JSON on stdout
  --engine e     open with the native or the js engine (default: the active engine)
  --verbose      stack traces on errors
  --help         this text

exit codes: 0 repaired (or nothing to repair), 1 failure, 2 usage error,
            3 the directory is in use by a live process, 4 the native engine is not available`;

export async function runRepair(args: ParsedArgs, out: Output): Promise<number> {
  const [given, extra] = args.positionals;
  if (given === undefined) throw new CommandError('missing the data directory: litetopic repair <dir>', EXIT.USAGE);
  if (extra !== undefined) throw new CommandError(`unexpected argument "${extra}"`, EXIT.USAGE);
  const dir = resolve(given);
  const engine = text(args, 'engine') as EngineName | undefined;
  const engineOption = engine === undefined ? {} : { engine };
  const { layout, logDir } = layoutOf(dir);
  try {
    const log = await CommitLog.open(logDir, { repair: true, ...engineOption });
    const recovery = log.stats().recovery;
    await log.close();
    if (layout === 'broker') {
      // Its journal refers to offsets of the repaired log; a broker open reconciles the two.
      const broker = await Broker.open({ dir, repair: true, timers: 'manual', ...engineOption });
      await broker.close();
    }
    if (flag(args, 'json')) out.info(JSON.stringify({ dir, layout, recovery }, null, 2));
    else out.info(`${dir}: ${recoveryText(recovery)}`);
    return EXIT.OK;
  } catch (error) {
    if (error instanceof LogLockedError) throw lockedError(logDir, error.pid);
    throw error;
  }
}

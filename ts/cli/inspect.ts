/**
 * `litetopic inspect <dir>`: prints a data directory's log, broker, topic, group and lite-topic
 * tables, or everything as JSON with `--json`. Reading is done by inspect-read.ts.
 */
import { resolve } from 'node:path';
import type { EngineName } from '../index.js';
import { CommandError, EXIT, flag, integer, type ParsedArgs, text } from './args.js';
import { formatBytes, formatCount, formatTimestamp, renderTable } from './format.js';
import { type Inspection, inspectDirectory } from './inspect-read.js';
import type { Output } from './output.js';

export const INSPECT_OPTIONS = {
  json: { kind: 'flag' },
  limit: { kind: 'integer', min: 0, max: 1_000_000 },
  engine: { kind: 'string', choices: ['native', 'js'] },
} as const;

export const INSPECT_HELP = `usage: litetopic inspect <dir> [--json] [--limit n] [--engine native|js]

Prints what a data directory holds: the commit log (segments, bytes, LMQs, what recovery did), the
broker (when <dir> is a broker directory and its state is persisted), its topics, its groups with
their lag, and its lite topics (the LMQs named %LMQ%$<parent>$<lite topic>) with offsets and last
write time, most recently written first.

Nothing in the directory changes: inspect opens it read-only, takes no lock and may run beside a
live owner (it then shows a snapshot). For a directory left by a crash it says what the next
writable open will do: where it cuts a torn tail, and any damage it refuses, which only
"litetopic repair" cuts.

options:
  --json         everything as one JSON document on stdout (all lite topics, no limit)
  --limit n      lite topics shown in the table (default 20; 0 for none)
  --engine e     open with the native or the js engine (default: the active engine)
  --verbose      stack traces on errors
  --help         this text

exit codes: 0 ok, 1 failure (not a data directory, an unreadable file), 2 usage error,
            4 the native engine is not available`;

/** What recovery found, in the words of a read-only open: what the next writable open will do. */
export function recoveryText(r: Inspection['log']['recovery']): string {
  const cut =
    r.cutPosition >= 0
      ? `${r.readOnly ? 'a writable open cuts' : 'cut'} ${formatCount(r.cutBytes)} bytes at ${formatCount(r.cutPosition)}`
      : 'nothing to cut';
  const removed =
    r.removedFiles.length > 0 ? `, ${r.readOnly ? 'removes' : 'removed'} ${r.removedFiles.join(', ')}` : '';
  const damage =
    r.corruption === null
      ? ''
      : `; DAMAGE at ${r.corruption.file} position ${formatCount(r.corruption.position)} (${r.corruption.message})` +
        (r.readOnly ? ': a writable open refuses it, "litetopic repair" cuts it' : ': cut by the repair');
  return `checkpoint ${r.checkpoint}, ${formatCount(r.replayedRecords)} records replayed, ${cut}${removed}${damage}`;
}

function logTable(report: Inspection): string {
  const { log } = report;
  const recovery = recoveryText(log.recovery);
  return renderTable({
    title: 'commit log',
    headers: ['directory', 'layout', 'engine', 'segments', 'on disk', 'write position', 'LMQs', 'recovery'],
    rows: [
      [
        report.dir,
        report.layout,
        report.engine,
        String(log.segments),
        formatBytes(log.segmentBytesOnDisk),
        formatCount(log.writePosition),
        formatCount(log.lmqs),
        recovery,
      ],
    ],
  });
}

function brokerTable(info: Record<string, unknown>): string {
  const keys = Object.keys(info).filter((k) => k !== 'engine');
  return renderTable({
    title: 'broker',
    headers: keys,
    rows: [
      keys.map((k) => {
        const value = info[k];
        if (typeof value !== 'number') return String(value);
        return k.endsWith('Bytes') ? formatBytes(value) : formatCount(value);
      }),
    ],
  });
}

function render(report: Inspection, limit: number): string {
  const parts = [logTable(report)];
  if (report.broker !== null) parts.push(brokerTable(report.broker));
  parts.push(
    renderTable({
      title: 'topics',
      headers: ['topic', 'lite topics', 'messages', 'last write', 'groups'],
      rows: report.topics.map((t) => [
        t.name,
        formatCount(t.liteTopics),
        formatCount(t.messages),
        formatTimestamp(t.lastWriteTimestamp),
        t.groups.join(', ') || '-',
      ]),
    }),
  );
  if (report.layout === 'broker') {
    parts.push(
      renderTable({
        title: 'groups',
        headers: ['group', 'topic', 'model', 'wildcard', 'lite topics', 'lag', 'most lag'],
        rows: report.groups.map((g) => [
          g.group,
          g.bindTopic,
          g.subModel,
          g.wildcard ? 'yes' : 'no',
          formatCount(g.liteTopics),
          formatCount(g.totalLag),
          g.topByLag.map((l) => `${l.liteTopic} (${formatCount(l.lag)})`).join(', ') || '-',
        ]),
      }),
    );
  }
  if (limit > 0) {
    const newest = [...report.liteTopics]
      .sort((a, b) => (b.lastWriteTimestamp ?? 0) - (a.lastWriteTimestamp ?? 0))
      .slice(0, limit);
    const shown =
      newest.length < report.liteTopics.length
        ? ` (${newest.length} of ${formatCount(report.liteTopics.length)}, most recently written first; --limit for more)`
        : '';
    parts.push(
      renderTable({
        title: `lite topics${shown}`,
        headers: ['topic', 'lite topic', 'min offset', 'max offset', 'last write'],
        rows: newest.map((l) => [
          l.parent,
          l.liteTopic,
          formatCount(l.minOffset),
          formatCount(l.maxOffset),
          formatTimestamp(l.lastWriteTimestamp),
        ]),
      }),
    );
  }
  if (report.otherLmqs.length > 0) parts.push(`other LMQs: ${formatCount(report.otherLmqs.length)}`);
  return parts.join('\n\n');
}

export async function runInspect(args: ParsedArgs, out: Output): Promise<number> {
  const [dir, extra] = args.positionals;
  if (dir === undefined) throw new CommandError('missing the data directory: litetopic inspect <dir>', EXIT.USAGE);
  if (extra !== undefined) throw new CommandError(`unexpected argument "${extra}"`, EXIT.USAGE);
  const report = await inspectDirectory(resolve(dir), text(args, 'engine') as EngineName | undefined);
  if (flag(args, 'json'))
    out.info(JSON.stringify(report, (_key, value: unknown) => (value === undefined ? null : value), 2));
  else out.info(render(report, integer(args, 'limit', 20)));
  return EXIT.OK;
}

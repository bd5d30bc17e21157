/**
 * What `litetopic inspect` reads from a data directory, as plain data (the `--json` output).
 *
 * A directory is either a broker's (`<dir>/log` holds the commit log, `<dir>/broker-state` the
 * broker's journal) or a bare commit log (`<dir>/segments`). Everything is opened read-only: nothing
 * in the directory changes, its lock is neither taken nor checked, and a live owner is never
 * disturbed; the log's recovery figures say what a writable open would do (where it would cut a
 * torn tail, what damage it would refuse). Every LMQ is listed: lite topics are the LMQs named
 * `%LMQ%$<parent>$<lite topic>`. For a broker directory the broker is opened read-only as well and
 * `broker.admin` describes the persisted topics and groups.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Broker, CommitLog, type CommitLogStats, type EngineName } from '../index.js';
import { CommandError, EXIT } from './args.js';

export interface LiteTopicRow {
  parent: string;
  liteTopic: string;
  minOffset: number;
  maxOffset: number;
  lastWriteTimestamp: number | undefined;
}

export interface TopicRow {
  name: string;
  liteTopics: number;
  /** Messages still stored: the sum of maxOffset − minOffset over its lite topics. */
  messages: number;
  lastWriteTimestamp: number | undefined;
  /** Groups bound to it (broker directories, when the broker persists them). */
  groups: string[];
}

export interface GroupRow {
  group: string;
  bindTopic: string;
  subModel: string;
  wildcard: boolean;
  liteTopics: number;
  totalLag: number;
  topByLag: { liteTopic: string; lag: number }[];
}

export interface Inspection {
  dir: string;
  layout: 'broker' | 'log';
  engine: EngineName;
  log: CommitLogStats;
  /** `broker.admin.brokerInfo()`, or null for a bare log. */
  broker: Record<string, unknown> | null;
  topics: TopicRow[];
  groups: GroupRow[];
  liteTopics: LiteTopicRow[];
  /** LMQs whose names are not `%LMQ%$parent$lite`. */
  otherLmqs: string[];
}

const LMQ = /^%LMQ%\$([^$]+)\$(.+)$/;
const PAGE = 10_000;

/** The one-line error for a directory a live process holds (`LOG_LOCKED`), exit code 3. */
export function lockedError(dir: string, pid: number | undefined): CommandError {
  return new CommandError(
    `${dir} is in use by ${pid === undefined ? 'a live process' : `process ${pid}`} (its LOCK); stop that process first`,
    EXIT.LOCKED,
  );
}

export function layoutOf(dir: string): { layout: 'broker' | 'log'; logDir: string } {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new CommandError(`${dir} is not a directory`, EXIT.FAILURE);
  if (existsSync(join(dir, 'log')) || existsSync(join(dir, 'broker-state')))
    return { layout: 'broker', logDir: join(dir, 'log') };
  if (existsSync(join(dir, 'segments')) || existsSync(join(dir, 'LOCK'))) return { layout: 'log', logDir: dir };
  throw new CommandError(`${dir} is not a litetopic data directory (no log/, segments/ or LOCK)`, EXIT.FAILURE);
}

async function readLog(logDir: string, engine: EngineName | undefined) {
  const log = await CommitLog.open(logDir, { readOnly: true, ...(engine === undefined ? {} : { engine }) });
  try {
    const liteTopics: LiteTopicRow[] = [];
    const otherLmqs: string[] = [];
    let cursor: string | undefined;
    do {
      const page = log.listLmqs('', PAGE, cursor);
      for (const lmq of page.lmqs) {
        const match = LMQ.exec(lmq);
        if (match === null) {
          otherLmqs.push(lmq);
          continue;
        }
        liteTopics.push({
          parent: match[1] as string,
          liteTopic: match[2] as string,
          minOffset: log.minOffset(lmq),
          maxOffset: log.maxOffset(lmq),
          lastWriteTimestamp: log.lastWriteTimestamp(lmq),
        });
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    return { stats: log.stats(), liteTopics, otherLmqs };
  } finally {
    await log.close();
  }
}

function topicsFrom(liteTopics: readonly LiteTopicRow[]): Map<string, TopicRow> {
  const topics = new Map<string, TopicRow>();
  for (const row of liteTopics) {
    let topic = topics.get(row.parent);
    if (topic === undefined) {
      topic = { name: row.parent, liteTopics: 0, messages: 0, lastWriteTimestamp: undefined, groups: [] };
      topics.set(row.parent, topic);
    }
    topic.liteTopics++;
    topic.messages += row.maxOffset - row.minOffset;
    if (row.lastWriteTimestamp !== undefined) {
      topic.lastWriteTimestamp = Math.max(topic.lastWriteTimestamp ?? 0, row.lastWriteTimestamp);
    }
  }
  return topics;
}

/** Opens the broker over the directory read-only and reads what its admin queries report. */
async function readBroker(dir: string, engine: EngineName | undefined, topics: Map<string, TopicRow>) {
  const broker = await Broker.open({ dir, readOnly: true, ...(engine === undefined ? {} : { engine }) });
  try {
    const admin = broker.admin;
    const groups: GroupRow[] = [];
    for (const topic of topics.values()) {
      let names: string[];
      try {
        names = admin.topicInfo(topic.name).groups;
      } catch {
        continue; // a parent with messages that the broker's state does not name
      }
      topic.groups = names;
      for (const name of names) {
        const g = admin.groupInfo(name, { topK: 3 });
        groups.push({
          group: g.group,
          bindTopic: g.bindTopic,
          subModel: g.subModel,
          wildcard: g.wildcard,
          liteTopics: g.liteTopics,
          totalLag: g.totalLag,
          topByLag: g.topByLag.map((l) => ({ liteTopic: l.liteTopic, lag: l.lag })),
        });
      }
    }
    return { info: { ...admin.brokerInfo() } as Record<string, unknown>, groups };
  } finally {
    await broker.close();
  }
}

export async function inspectDirectory(dir: string, engine: EngineName | undefined): Promise<Inspection> {
  const { layout, logDir } = layoutOf(dir);
  const { stats, liteTopics, otherLmqs } = await readLog(logDir, engine);
  const topics = topicsFrom(liteTopics);
  const broker = layout === 'broker' ? await readBroker(dir, engine, topics) : { info: null, groups: [] };
  return {
    dir,
    layout,
    engine: stats.engine,
    log: stats,
    broker: broker.info,
    topics: [...topics.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
    groups: broker.groups,
    liteTopics,
    otherLmqs,
  };
}

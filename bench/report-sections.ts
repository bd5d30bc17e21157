/**
 * Each suite's section of RESULTS.md, from its record alone: a heading, where and how the figures
 * were taken, what the workload is, the targets (computed again from the recorded figures, so the
 * page states the targets of the code that renders it) and the suite's tables.
 */
import { brokerTables } from './broker-print.js';
import type { BrokerBenchResult } from './broker-result.js';
import { checkBrokerTargets } from './broker-targets.js';
import { keySharedTables } from './key-shared-print.js';
import type { KeySharedBenchResult } from './key-shared-result.js';
import { checkKeySharedTargets } from './key-shared-targets.js';
import type { SkippedPeer } from './lib.js';
import { lifecycleTables } from './lifecycle-print.js';
import type { LifecycleBenchResult } from './lifecycle-result.js';
import { checkLifecycleTargets } from './lifecycle-targets.js';
import { logTables } from './log-print.js';
import type { LogBenchResult } from './log-result.js';
import { checkLogTargets } from './log-targets.js';
import type { Timing } from './measure.js';
import { patternTables } from './pattern-print.js';
import type { PatternBenchResult } from './pattern-result.js';
import { checkPatternTargets } from './pattern-targets.js';
import type { RecordOf, SuiteRecord } from './record.js';
import { type RocketmqBenchResult, rocketmqTables } from './rocketmq.js';
import type { Table } from './table.js';
import type { Target } from './targets.js';
import { trieTables } from './trie-print.js';
import type { TrieBenchResult } from './trie-result.js';
import { checkTrieTargets } from './trie-targets.js';

export interface Section {
  heading: string;
  /** The lines about the run: where, how, and the suite's own line about its inputs. */
  run: { workload: string; method: string };
  /** Paragraphs on the workload and the checks, before the targets. */
  about: string[];
  targets: Target[];
  tables: Table[];
}

const count = (n: number) => n.toLocaleString('en-US');
const quick = (config: { quick: boolean }) => (config.quick ? ' (quick run)' : '');

/** How the interleaved suites time their short cases (bench/measure.ts). */
function timingMethod(timing: Timing): string {
  return (
    `${timing.timeMs} ms per case in ${timing.rounds} interleaved rounds (each figure is the median of ` +
    `the rounds' medians; spread = range of the rounds' medians over that median)`
  );
}

const skipped = (peers: readonly SkippedPeer[] | undefined, peer: string) => peers?.some((p) => p.peer === peer);

function patternSection(record: RecordOf<'pattern', PatternBenchResult>): Section {
  const { config } = record.result;
  const targets = checkPatternTargets(record.result);
  return {
    heading: 'Pattern engine',
    run: {
      workload: `seed ${config.seed}; ${config.topicsPerIteration} topics per reverse-lookup iteration${quick(config)}`,
      method: timingMethod(config.timing),
    },
    about: [
      [
        'Workload: agent-bus names `tenantT__agentA__sessionS[__tool[__phase]]` (3–5 segments, Zipf tenants, agents and',
        'tools); subscriptions 80% exact names, 20% wildcards (`t__a__s__*`, `t__a__**`, `t__a__*__tool`, `t__**`,',
        '`*__*__*__tool`), ids standing for subscribers of about two patterns each (bench/workload.ts). Before timing,',
        "every single-match implementation is checked against `matches()` on its batch, and both engines' ids and counts",
        skipped(record.skippedPeers, 'qlobber')
          ? 'against each other on every topic and against a linear scan of the subscriptions on the first 50 topics ' +
            '(qlobber, the usual reference, was skipped); every timed iteration checks its match count.'
          : "against qlobber's, topic by topic; every timed iteration checks its match count.",
      ].join('\n'),
    ],
    targets,
    tables: patternTables({ ...record.result, targets }),
  };
}

function trieSection(record: RecordOf<'trie', TrieBenchResult>): Section {
  const { config } = record.result;
  const targets = checkTrieTargets(record.result);
  return {
    heading: 'Topic-name trie',
    run: {
      workload: `seed ${config.seed}; ${count(config.names)} distinct agent-bus names${quick(config)}`,
      method: timingMethod(config.timing),
    },
    about: [
      [
        'Workload: distinct agent-bus names `tenantT__agentA__sessionS[__tool[__phase]]` (3–5 segments, Zipf tenants,',
        'agents and tools; bench/workload.ts). The expand patterns run from one stored name of `tenant7` (an ordinary',
        'tenant, about 2% of the names) through its session, agent and whole tenant to a leading wildcard, plus the',
        'hottest tenant, `tenant0`; every timed iteration checks its match count against the linear scan. The churn',
        'section adds and removes names in rounds between expands of a session, an agent and a tenant of `tenant0`,',
        'then as many rounds again with a wide walk (`*__*__*__code`) after those expands, which starts and carries the',
        "trie's compaction in steps, so that the longest single call of the rounds shows any stall.",
      ].join('\n'),
    ],
    targets,
    tables: trieTables({ ...record.result, targets }),
  };
}

function logSection(record: RecordOf<'log', LogBenchResult>): Section {
  const { config } = record.result;
  const targets = checkLogTargets(record.result);
  return {
    heading: 'Commit log',
    run: {
      workload:
        `seed ${config.seed}; ${count(config.records)} records over ${count(config.lmqs)} ` +
        `LMQs, bodies of ${config.bodySizes.join(' and ')} bytes${quick(config)}`,
      method:
        `each store appends the whole workload once per round into a fresh directory, ${config.rounds} interleaved ` +
        'rounds with the order reversed every other round; each figure is the median over rounds, ratios are paired ' +
        'by round, spread = range of the rounds over the median',
    },
    about: [
      [
        'Workload: LMQs `%LMQ%$agents$t<i>__a<j>` (100 tenants × 100 agents), each record in one LMQ drawn uniformly,',
        'bodies cut from a seeded random pool, no key, tag or properties (bench/log-workload.ts). Every run is checked:',
        'the store must hold every record after appending, and every read pass must return every record and body byte.',
        'All stores run in one process on the same disk, in temporary directories under `os.tmpdir()`.',
      ].join('\n'),
    ],
    targets,
    tables: logTables({ ...record.result, targets }),
  };
}

function brokerSection(record: RecordOf<'broker', BrokerBenchResult>): Section {
  const { config, throughput, latency } = record.result;
  const targets = checkBrokerTargets(throughput, latency);
  return {
    heading: 'Broker',
    run: {
      workload:
        `seed ${config.seed}; ${count(config.topics)} lite topics, ${count(config.messages)} ` +
        `messages of ${config.bodyBytes} B per throughput run${quick(config)}`,
      method:
        `each case runs once per round on a fresh broker, ${config.rounds} interleaved rounds with the order reversed every ` +
        'other round; each figure is the median over rounds (the machine is shared and noisy)',
    },
    about: [
      [
        'Workload: lite topics `tenantT__agentA__sessionS` (5% with a fourth segment `error`) of the parent `agents`, Zipf',
        'tenants and agents, opened throughout the run; one producer with `sendBatch`; every client long-polls `pop`',
        '(`maxNum` 32, `waitMs` 1000) and acks everything (bench/broker-workload.ts, bench/broker-scenario.ts). Each delivery',
        'is checked: the right group, exactly once, FIFO with no gap per lite topic, never redelivered; a rate is reported',
        'only when every group received and acked exactly what it should.',
      ].join('\n'),
    ],
    targets,
    tables: brokerTables({ ...record.result, targets }),
  };
}

function lifecycleSection(record: RecordOf<'lifecycle', LifecycleBenchResult>): Section {
  const { config, reopen, expiry } = record.result;
  const targets = checkLifecycleTargets(reopen, expiry);
  const load = config.loadAverage
    ? ` (1-minute load average ${config.loadAverage.map((l) => l.toFixed(1)).join(' before, ')} after)`
    : '';
  return {
    heading: 'Broker lifecycle: reopen and expiry',
    run: {
      workload:
        `seed ${config.seed}; reopen of ${count(config.messages)} messages over ${count(config.liteTopics)} ` +
        `lite topics; expiry of ${count(config.expiry.idle)} idle among ${count(config.expiry.topics)}` +
        `${config.scaleNote ? ` (scaled down: ${config.scaleNote})` : ''}${quick(config)}`,
      method: `each case runs once per engine (bench/lifecycle*.ts); the machine is shared and noisy${load}`,
    },
    about: [],
    targets,
    tables: lifecycleTables({ ...record.result, targets }),
  };
}

function keySharedSection(record: RecordOf<'key-shared', KeySharedBenchResult>): Section {
  const { config, phases, runs } = record.result;
  const targets = checkKeySharedTargets(phases, runs);
  return {
    heading: 'Key-shared consumption',
    run: {
      workload:
        `seed ${config.seed}; one lite topic, ${count(config.keys)} uniform keys, ${config.buckets} buckets, ` +
        `clients ${config.phases.join(' → ')}, ${config.processMs} ms per message${quick(config)}`,
      method:
        `each engine runs every phase once per round on a fresh in-memory broker with system timers, ${config.rounds} ` +
        'rounds with the engine order reversed every other round; rates are medians over rounds (the machine is shared and noisy)',
    },
    about: [
      [
        'Workload: one hot lite topic of the parent `agents`, a key-shared group (`keyShared: { buckets }`), the in-memory',
        'store; a producer keeps a backlog of keyed messages and clients join one at a time, never leaving',
        '(bench/key-shared.ts, bench/key-shared-run.ts). Every delivery is checked for I1, I2 and exactly once as it is popped.',
      ].join('\n'),
    ],
    targets,
    tables: keySharedTables({ ...record.result, targets }),
  };
}

function rocketmqSection(record: RecordOf<'rocketmq', RocketmqBenchResult>): Section {
  const { config } = record.result;
  return {
    heading: 'Embedded and RocketMQ',
    run: {
      workload: `${count(config.liteTopics)} lite topics, ${count(config.messages)} messages of ${config.bodyBytes} B${quick(config)}`,
      method:
        `one run per backend: single sends at 1 and at ${config.sendConcurrency} in flight, then sends and one ` +
        'consumer together (POP 32, long poll, acks in parallel)',
    },
    about: [
      [
        'The RocketMQ cluster is the test cluster of `npm run test:rocketmq` (name server, two brokers, proxy, on the',
        'same machine as the client); docs/ROCKETMQ.md, "Sending", says where its time goes.',
      ].join('\n'),
    ],
    targets: [],
    tables: rocketmqTables(record.result),
  };
}

/** The section of RESULTS.md a record renders to. */
export function sectionOf(record: SuiteRecord): Section {
  switch (record.suite) {
    case 'pattern':
      return patternSection(record);
    case 'trie':
      return trieSection(record);
    case 'log':
      return logSection(record);
    case 'broker':
      return brokerSection(record);
    case 'lifecycle':
      return lifecycleSection(record);
    case 'key-shared':
      return keySharedSection(record);
    case 'rocketmq':
      return rocketmqSection(record);
  }
}

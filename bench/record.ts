/**
 * A suite's record: what one written run stores in <out>/results/<suite>.json, with the machine it
 * ran on and the command that reproduces it. RESULTS.md and the charts are rendered from these
 * files alone (bench/report.ts).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import type { EngineInfo } from '../ts/index.js';
import type { BrokerBenchResult } from './broker-result.js';
import type { KeySharedBenchResult } from './key-shared-result.js';
import { lib, PACKAGE_ROOT, type SkippedPeer } from './lib.js';
import type { LifecycleBenchResult } from './lifecycle-result.js';
import type { LogBenchResult } from './log-result.js';
import type { PatternBenchResult } from './pattern-result.js';
import type { RocketmqBenchResult } from './rocketmq.js';
import type { TrieBenchResult } from './trie-result.js';

const { engineInfo } = lib;

export interface Environment {
  date: string;
  cpu: string;
  cores: number;
  memoryBytes: number;
  platform: string;
  node: string;
  packageVersion: string;
  engine: EngineInfo;
}

export interface RecordOf<S extends string, R> {
  suite: S;
  command: string;
  environment: Environment;
  result: R;
  /** Peers that could not be loaded: their rows and the targets against them are not in `result`. */
  skippedPeers?: SkippedPeer[];
}

export type SuiteRecord =
  | RecordOf<'pattern', PatternBenchResult>
  | RecordOf<'trie', TrieBenchResult>
  | RecordOf<'log', LogBenchResult>
  | RecordOf<'broker', BrokerBenchResult>
  | RecordOf<'lifecycle', LifecycleBenchResult>
  | RecordOf<'key-shared', KeySharedBenchResult>
  | RecordOf<'rocketmq', RocketmqBenchResult>;

export function environment(): Environment {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryBytes: totalmem(),
    platform: `${process.platform}-${process.arch}`,
    node: process.version,
    packageVersion: manifest.version,
    engine: engineInfo(),
  };
}

/** Writes <out>/results/<suite>.json; returns the file. */
export function writeRecord(record: SuiteRecord, out: string): string {
  const dir = join(out, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${record.suite}.json`);
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}

/** The stored records of the given suites, skipping any that has not had a full run yet. */
export function readRecords(suites: readonly SuiteRecord['suite'][], out: string): SuiteRecord[] {
  return suites
    .map((suite) => join(out, 'results', `${suite}.json`))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')) as SuiteRecord);
}

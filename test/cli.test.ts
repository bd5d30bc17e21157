/**
 * The `litetopic` command as a user runs it: help, usage errors and their exit codes, one-line
 * errors without stack traces, bench writing a quick suite's results where --out says, inspect reading
 * a directory without changing it (a live owner's included) and repair cutting what inspect reports.
 * The demo and inspect on real data are in test/cli-demo.test.ts.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CommitLog } from '../ts/index.js';
import { cli, ROOT, scratch, startHolder } from './cli-helpers.js';
import { ENGINES, RUN_TESTS_WITHOUT_NATIVE } from './engines.js';
import { directoryDigest } from './log-helpers.js';

/** Exit codes as README.md "Command line" documents them. */
const OK = 0;
const FAILURE = 1;
const USAGE = 2;
const LOCKED = 3;

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines[0] as string;
}

(RUN_TESTS_WITHOUT_NATIVE ? describe.concurrent : describe.skip)('litetopic --help and usage errors', () => {
  it('lists the commands and exit codes', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(OK);
    for (const word of ['demo', 'bench', 'inspect', 'exit codes']) expect(r.stdout).toContain(word);
  });

  it.each(['demo', 'bench', 'inspect'])('%s --help describes its options and exit codes', async (command) => {
    const r = await cli([command, '--help']);
    expect(r.code).toBe(OK);
    expect(r.stdout).toContain(`usage: litetopic ${command}`);
    expect(r.stdout).toContain('exit codes');
    expect(r.stderr).toBe('');
  });

  it('no command prints the usage on stderr and exits 2', async () => {
    const r = await cli([]);
    expect(r.code).toBe(USAGE);
    expect(r.stderr).toContain('usage: litetopic <command>');
    expect(r.stdout).toBe('');
  });

  it.each([
    [['frob'], /unknown command "frob"/],
    [['demo', '--seconds', '0'], /--seconds must be at least 1/],
    [['demo', '--seconds=abc'], /--seconds takes a whole number/],
    [['inspect'], /missing the data directory/],
    [['inspect', '--json', '--bogus', 'x'], /unknown option "--bogus"/],
    [['inspect', '-x', 'dir'], /unknown option "-x"/],
    [['demo', '--json=yes'], /--json/],
    [['demo', '--seconds'], /--seconds/],
    [['bench', 'nope'], /unknown suite "nope"/],
  ])('%j is a usage error: one line, exit 2', async (args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(USAGE);
    expect(oneLine(r.stderr)).toMatch(message);
  });

  it('a runtime failure is one line without a stack trace, exit 1', async () => {
    const missing = join(scratch(), 'nothing-here');
    const r = await cli(['inspect', missing]);
    expect(r.code).toBe(FAILURE);
    expect(oneLine(r.stderr)).toBe(`litetopic inspect: ${missing} is not a directory`);
    const dir = scratch();
    writeFileSync(join(dir, 'notes.txt'), 'not data');
    const other = await cli(['inspect', dir]);
    expect(other.code).toBe(FAILURE);
    expect(oneLine(other.stderr)).toMatch(/is not a litetopic data directory/);
  });

  it('demo refuses a --dir that already holds files', async () => {
    const dir = scratch();
    mkdirSync(join(dir, 'old'));
    const r = await cli(['demo', '--dir', dir, '--seconds', '1', '--engine', 'js']);
    expect(r.code).toBe(USAGE);
    expect(oneLine(r.stderr)).toMatch(/is not empty/);
  });
});

describe('inspect reads without changing, repair is explicit', () => {
  const holders: { kill: () => boolean }[] = [];
  afterAll(() => {
    for (const h of holders) h.kill();
  });

  it('inspect reads a directory a live process holds, and changes nothing; repair refuses it with exit 3', async () => {
    const dir = scratch();
    const holder = await startHolder(join(ROOT, 'test', 'cli-lock-holder.ts'), [dir]);
    holders.push(holder);
    // The owner prepares its next segment in the background after it opens; wait until its own
    // writes are done, so that any change after this is the reader's.
    let before = directoryDigest(dir);
    for (let stable = 0; stable < 3; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = directoryDigest(dir);
      stable = JSON.stringify(now) === JSON.stringify(before) ? stable + 1 : 0;
      before = now;
    }
    const read = await cli(['inspect', dir, '--json']);
    expect(read.stderr).toBe('');
    expect(read.code).toBe(OK);
    const report = JSON.parse(read.stdout);
    expect(report.log.recovery.readOnly).toBe(true);
    expect(report.liteTopics).toEqual([
      expect.objectContaining({ parent: 'agents', liteTopic: 'tenant1__agent1__session1', minOffset: 0, maxOffset: 1 }),
    ]);
    expect(directoryDigest(dir)).toEqual(before);

    const refused = await cli(['repair', dir]);
    expect(refused.code).toBe(LOCKED);
    expect(oneLine(refused.stderr)).toContain(`in use by process ${holder.pid}`);
    expect(directoryDigest(dir)).toEqual(before);
  });

  it.each(ENGINES)(
    'on %s: inspect shows damage a writable open refuses; repair cuts it; the log opens again',
    async (engine) => {
      const dir = scratch();
      const log = await CommitLog.open(dir, { engine, flush: 'sync' });
      const results = await log.append(
        Array.from({ length: 10 }, (_, i) => ({ lmqs: ['%LMQ%$agents$t1'], body: `message ${i}`.padEnd(200, '.') })),
      );
      await log.close();
      // Without its checkpoint the next open replays every record (a checkpoint vouches for what it
      // covers, which recovery does not read again); then one flipped bit in the body of the fourth
      // record is damage with valid records after it.
      rmSync(join(dir, 'checkpoint'));
      const segment = join(dir, 'segments', readdirSync(join(dir, 'segments'))[0] as string);
      const bytes = readFileSync(segment);
      const at = (results[3]?.position as number) + 100;
      bytes[at] = (bytes[at] as number) ^ 0x10;
      writeFileSync(segment, bytes);
      await expect(CommitLog.open(dir, { engine })).rejects.toMatchObject({ code: 'LOG_CORRUPT' });

      const before = directoryDigest(dir);
      const inspected = await cli(['inspect', dir, '--engine', engine]);
      expect(inspected.code).toBe(OK);
      expect(inspected.stdout).toMatch(/DAMAGE at .*\.seg position/);
      expect(inspected.stdout).toContain('a writable open refuses it, "litetopic repair" cuts it');
      expect(directoryDigest(dir)).toEqual(before);

      const repaired = await cli(['repair', dir, '--engine', engine, '--json']);
      expect(repaired.stderr).toBe('');
      expect(repaired.code).toBe(OK);
      const recovery = JSON.parse(repaired.stdout).recovery;
      expect(recovery.corruption).toMatchObject({ position: results[3]?.position });
      expect(recovery.cutPosition).toBe(results[3]?.position);

      const reopened = await CommitLog.open(dir, { engine });
      try {
        expect(reopened.read('%LMQ%$agents$t1', 0, 32).map((m) => m.body.toString().trimEnd())).toEqual(
          [0, 1, 2].map((i) => `message ${i}`.padEnd(200, '.').trimEnd()),
        );
      } finally {
        await reopened.close();
      }
    },
  );
});

describe('bench', () => {
  it.runIf(RUN_TESTS_WITHOUT_NATIVE)('--render takes neither suites nor --quick', async () => {
    const r = await cli(['bench', '--render', '--quick']);
    expect(r.code).toBe(USAGE);
    expect(oneLine(r.stderr)).toMatch(/--render takes no suite and no --quick/);
  });

  it.runIf(RUN_TESTS_WITHOUT_NATIVE)('--render without stored results in --out is one line, exit 1', async () => {
    const out = scratch();
    const r = await cli(['bench', '--render', '--out', out]);
    expect(r.code).toBe(FAILURE);
    expect(oneLine(r.stderr)).toBe(
      `litetopic bench: there is no ${join(out, 'results')} to render from; run litetopic bench first`,
    );
  });

  // The pattern suite compares the two engines, so it needs the native one.
  it.skipIf(!ENGINES.includes('native'))(
    'a quick suite with --out writes its JSON, RESULTS.md and chart there, with the seed given',
    async () => {
      const out = join(scratch(), 'results here');
      const r = await cli(['bench', 'pattern', '--quick', '--seed', '7', '--out', out]);
      expect(r.code, r.stderr).toBe(OK);
      expect(r.stdout).toContain('seed 7');
      const record = JSON.parse(readFileSync(join(out, 'results', 'pattern.json'), 'utf8'));
      expect(record).toMatchObject({ suite: 'pattern', result: { config: { seed: 7, quick: true } } });
      expect(record.command).toBe('LITETOPIC_BENCH_SEED=7 npm run bench -- pattern --quick');
      expect(readFileSync(join(out, 'RESULTS.md'), 'utf8')).toContain('## Pattern engine');
      expect(readFileSync(join(out, 'charts', 'pattern-engine.svg'), 'utf8')).toMatch(/^<svg /);
      // In a checkout every peer is installed: nothing is skipped.
      expect(record.skippedPeers).toBeUndefined();
      expect(existsSync(join(out, 'results', 'trie.json'))).toBe(false);
      // --render regenerates the page and the chart from the stored results alone.
      rmSync(join(out, 'RESULTS.md'));
      rmSync(join(out, 'charts'), { recursive: true });
      const rendered = await cli(['bench', '--render', '--out', out]);
      expect(rendered.code, rendered.stderr).toBe(OK);
      expect(readFileSync(join(out, 'RESULTS.md'), 'utf8')).toContain('## Pattern engine');
      expect(readFileSync(join(out, 'charts', 'pattern-engine.svg'), 'utf8')).toMatch(/^<svg /);
    },
    180_000,
  );
});

/**
 * `litetopic demo` on each engine with tiny settings, in a process whose temporary directory is a
 * fresh one, so the test can see that the demo leaves nothing behind; then `--dir` keeps the data
 * and `litetopic inspect` reads it back as tables and as JSON.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, scratch } from './cli-helpers.js';
import { ENGINES } from './engines.js';

const TINY = ['--seconds', '1', '--topics', '1000'];

describe.concurrent('litetopic demo', () => {
  it.each(ENGINES)('runs the agent bus on %s, reports every group and leaves nothing behind', async (engine) => {
    const tmp = scratch();
    const r = await cli(['demo', ...TINY, '--engine', engine], { TMPDIR: tmp });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^\\[${engine}\\] [\\d.]+s (sending|draining): sent [\\d,]+, consumed [\\d,]+, lag [\\d,]+, [\\d,]+ msgs/s`,
        'm',
      ),
    );
    expect(r.stdout).toContain('all delivered and acked');
    expect(r.stdout).toMatch(/ \([\d,]+ msgs\/s, [\d.]+ µs of CPU per message\), all delivered/);
    const header = r.stdout.split('\n').find((line) => line.startsWith('group'));
    expect(header?.split(/\s{2,}/)).toEqual([
      'group',
      'kind',
      'clients',
      'delivered',
      'acked',
      'redelivered',
      'p50 latency',
      'p99 latency',
      'engine',
    ]);
    for (const [group, kind, clients] of [
      ['planner', 'shared', 4],
      ['auditor', 'wildcard', 1],
      ['tools', 'exclusive', 2],
    ]) {
      expect(r.stdout).toMatch(
        new RegExp(
          `^${group}\\s+${kind}\\s+${clients}\\s+[\\d,]+\\s+[\\d,]+\\s+[\\d,]+\\s+.+ ms\\s+.+ ms\\s+${engine}$`,
          'm',
        ),
      );
    }
    // Only the demo's own files count: tsx keeps its cache in the temporary directory too.
    expect(readdirSync(tmp).filter((name) => !name.startsWith('tsx-'))).toEqual([]);
  });

  it('keeps --dir, and inspect prints its broker, topics, groups and lite topics', async () => {
    const dir = join(scratch(), 'data');
    const demo = await cli(['demo', ...TINY, '--engine', 'js', '--dir', dir]);
    expect(demo.code).toBe(0);
    expect(demo.stdout).toContain(`data kept in ${dir}`);
    expect(readdirSync(dir).sort()).toEqual(['broker-state', 'log']);

    const text = await cli(['inspect', dir, '--limit', '3']);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    for (const title of ['commit log', 'broker', 'topics', 'groups', 'lite topics (3 of']) {
      expect(text.stdout.split('\n').some((line) => line.startsWith(title))).toBe(true);
    }
    expect(text.stdout).toMatch(/^agents\s+[\d,]+\s+[\d,]+\s+\d{4}-\d\d-\d\dT.*auditor, planner, tools$/m);
    expect(text.stdout).toMatch(/^tools\s+agents\s+exclusive\s+no\s+[\d,]+\s+0\s+-$/m);
    expect(text.stdout).toMatch(/^auditor\s+agents\s+shared\s+yes\b/m);

    const json = await cli(['inspect', dir, '--json']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.layout).toBe('broker');
    expect(report.broker).toMatchObject({ topics: 1, groups: 3 });
    expect(report.topics).toEqual([
      expect.objectContaining({ name: 'agents', groups: ['auditor', 'planner', 'tools'] }),
    ]);
    expect(report.groups.map((g: { group: string }) => g.group).sort()).toEqual(['auditor', 'planner', 'tools']);
    expect(report.liteTopics.length).toBe(report.topics[0].liteTopics);
    expect(report.liteTopics.length).toBeGreaterThan(0);
    for (const lite of report.liteTopics) {
      expect(lite.liteTopic).toMatch(/^tenant\d+__agent\d+__session\d+(__error)?$/);
      expect(lite.maxOffset).toBeGreaterThan(lite.minOffset);
    }
  });

  it.runIf(ENGINES.length === 2)(
    '--engine both --json keeps one directory per engine, and each inspect command it prints works',
    async () => {
      const dir = join(scratch(), 'data');
      const demo = await cli(['demo', ...TINY, '--engine', 'both', '--dir', dir, '--json']);
      expect(demo.code).toBe(0);
      const document = JSON.parse(demo.stdout) as {
        reports: { engine: string; drained: boolean; messagesPerSecond: number; cpuMicrosPerMessage: number }[];
        nativeOverJs: number;
        cpuJsOverNative: number;
      };
      expect(document.reports.map((r) => [r.engine, r.drained])).toEqual([
        ['native', true],
        ['js', true],
      ]);
      for (const report of document.reports) {
        expect(report.messagesPerSecond).toBeGreaterThan(0);
        expect(report.cpuMicrosPerMessage).toBeGreaterThan(0);
      }
      const [native, js] = document.reports as [(typeof document.reports)[0], (typeof document.reports)[0]];
      expect(document.nativeOverJs).toBeCloseTo(native.messagesPerSecond / js.messagesPerSecond, 9);
      expect(document.cpuJsOverNative).toBeCloseTo(js.cpuMicrosPerMessage / native.cpuMicrosPerMessage, 9);
      const hint = demo.stderr.split('\n').find((line) => line.startsWith('data kept in'));
      const commands = [...(hint ?? '').matchAll(/litetopic inspect (\S+)/g)].map((m) => m[1] as string);
      expect(commands).toEqual([join(dir, 'native'), join(dir, 'js')]);
      for (const target of commands) {
        const inspected = await cli(['inspect', target, '--json']);
        expect(inspected.stderr).toBe('');
        expect(inspected.code).toBe(0);
        expect(JSON.parse(inspected.stdout).layout).toBe('broker');
      }
    },
  );
});

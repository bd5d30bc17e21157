/**
 * The crash tests' child process harness (test/child.ts). It is no engine's behaviour, so it runs
 * once. A crash test holds the engines to every line its fixture printed before the kill; a line lost
 * on its way to the test would read as a step undone (as lost acks did: a message acked before a kill,
 * its lines lost, looked like a message its group never consumed).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFixture } from './child.js';

const fixture = join(__dirname, 'fixtures', 'printer.ts');
/** About 2 MB of lines, far more than a pipe holds: the fixture outruns the test's reading. */
const LINES = 20_000;

describe('runFixture', () => {
  it.each(['untouched', 'touched'])(
    'returns every line printed with printSync before a SIGKILL (process.stdout %s)',
    { timeout: 120_000 },
    async (stdout) => {
      // The fixture kills itself once it has printed everything; the test's kill never comes.
      const lines = await runFixture(fixture, [String(LINES), stdout], 600_000);
      expect(lines.length).toBe(LINES);
      expect(lines).toEqual(Array.from({ length: LINES }, (_, n) => `line ${n} ${'x'.repeat(100)}`));
    },
  );
});

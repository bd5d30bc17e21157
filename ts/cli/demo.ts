/**
 * `litetopic demo`: runs the agent-to-agent bus of demo-bus.ts on a temporary data directory
 * (removed at the end) or on `--dir` (kept), shows a live progress line, then a summary table per
 * group. `--engine both` runs native then js and prints the ratio.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type EngineName, engineInfo, nativeAvailable } from '../index.js';
import { CommandError, EXIT, flag, integer, type ParsedArgs, text } from './args.js';
import { AUDITOR_PATTERNS, type BusProgress, type BusReport, PARENT_TOPIC, runBus } from './demo-bus.js';
import { formatCount, formatMs, renderTable } from './format.js';
import type { Output } from './output.js';

export const DEMO_OPTIONS = {
  engine: { kind: 'string', choices: ['native', 'js', 'both'] },
  seconds: { kind: 'integer', min: 1, max: 3600 },
  topics: { kind: 'integer', min: 1, max: 1_000_000 },
  dir: { kind: 'string' },
  json: { kind: 'flag' },
} as const;

export const DEMO_HELP = `usage: litetopic demo [--seconds n] [--topics n] [--engine native|js|both] [--dir path] [--json]

Runs an agent-to-agent message bus on an embedded broker: a parent topic "${PARENT_TOPIC}", lite
topics tenantT__agentA__sessionS created on the fly by their first message, and three groups:
planner (shared, 4 clients), auditor (wildcard: ${AUDITOR_PATTERNS.join(' and ')}) and tools
(exclusive, 2 clients). Producers send for --seconds, backing off when consumers fall behind; then
the consumers drain. Prints a live progress line, then the messages per second and the CPU time per
message, and per group: delivered, acked, redelivered and the p50/p99 latency from send to POP.

options:
  --seconds n    how long the producers send (default 10)
  --topics n     lite topics to create over the run (default 100000)
  --engine e     native, js, or both back to back with their ratios (default: the active engine)
  --dir path     keep the data directory here (default: a temporary one, removed at the end);
                 with --engine both, each engine writes to path/<engine>
  --json         one JSON document on stdout (each engine's report, and the ratios with both);
                 progress lines go to stderr
  --verbose      stack traces on errors
  --help         this text

exit codes: 0 ok, 1 failure, 2 usage error, 4 the native engine is not available here`;

function engines(choice: string | undefined): EngineName[] {
  if (choice === undefined) return [engineInfo().active];
  const wanted: EngineName[] = choice === 'both' ? ['native', 'js'] : [choice as EngineName];
  if (wanted.includes('native') && !nativeAvailable()) {
    const why = engineInfo().nativeLoadError ?? 'unknown reason';
    throw new CommandError(`the native engine is not available here (${why}); use --engine js`, EXIT.UNAVAILABLE);
  }
  return wanted;
}

function progressLine(engine: EngineName, p: BusProgress): string {
  return (
    `[${engine}] ${(p.elapsedMs / 1000).toFixed(1)}s ${p.phase}: sent ${formatCount(p.sent)}, ` +
    `consumed ${formatCount(p.consumed)}, lag ${formatCount(p.lag)}, ${formatCount(Math.round(p.sendRate))} msgs/s, ` +
    `${formatCount(p.liteTopics)} lite topics`
  );
}

function summary(report: BusReport, topics: number): string {
  const head =
    `${report.engine}: sent ${formatCount(report.sent)} messages to ${formatCount(report.liteTopics)} lite topics ` +
    (report.liteTopics < topics ? `(of ${formatCount(topics)} asked for; the producers ran out of time) ` : '') +
    `in ${(report.sendMs / 1000).toFixed(1)} s (${formatCount(Math.round(report.messagesPerSecond))} msgs/s, ` +
    `${report.cpuMicrosPerMessage.toFixed(1)} µs of CPU per message), ` +
    `${report.drained ? 'all delivered and acked' : 'NOT fully drained'} after ${(report.totalMs / 1000).toFixed(1)} s`;
  const table = renderTable({
    headers: ['group', 'kind', 'clients', 'delivered', 'acked', 'redelivered', 'p50 latency', 'p99 latency', 'engine'],
    rows: report.groups.map((g) => [
      g.group,
      g.kind,
      String(g.clients),
      formatCount(g.delivered),
      formatCount(g.acked),
      formatCount(g.redelivered),
      formatMs(g.p50Ms),
      formatMs(g.p99Ms),
      report.engine,
    ]),
  });
  return `${head}\n\n${table}`;
}

/** `a / b`, or null when either is not a positive figure. */
function ratio(a: number, b: number): number | null {
  return a > 0 && b > 0 ? a / b : null;
}

/** Native against js: messages per second (native / js) and CPU per message (js / native). */
function comparison(native: BusReport, js: BusReport): { nativeOverJs: number | null; cpuJsOverNative: number | null } {
  return {
    nativeOverJs: ratio(native.messagesPerSecond, js.messagesPerSecond),
    cpuJsOverNative: ratio(js.cpuMicrosPerMessage, native.cpuMicrosPerMessage),
  };
}

function ratioLine(native: BusReport, js: BusReport): string {
  const { nativeOverJs, cpuJsOverNative } = comparison(native, js);
  const times = (r: number | null) => (r === null ? '-' : `${r.toFixed(2)}×`);
  const p99 = (r: BusReport) => Math.max(...r.groups.map((g) => g.p99Ms ?? 0));
  return (
    `native / js: ${times(nativeOverJs)} the messages per second, js spends ${times(cpuJsOverNative)} ` +
    `native's CPU per message (p99 latency, worst group: native ${formatMs(p99(native))}, js ${formatMs(p99(js))})`
  );
}

/** A directory the demo may write: missing or empty, so a run never mixes with older data. */
function prepareDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
  if (readdirSync(dir).length > 0) {
    throw new CommandError(`--dir ${dir} is not empty; give a new or empty directory`, EXIT.USAGE);
  }
}

export async function runDemo(args: ParsedArgs, out: Output): Promise<number> {
  if (args.positionals.length > 0) throw new CommandError(`unexpected argument "${args.positionals[0]}"`, EXIT.USAGE);
  const seconds = integer(args, 'seconds', 10);
  const topics = integer(args, 'topics', 100_000);
  const list = engines(text(args, 'engine'));
  const keep = text(args, 'dir');
  const json = flag(args, 'json');
  // With --json, stdout carries the document alone; what a person reads goes to stderr.
  const say = json ? (line: string) => out.error(line) : (line: string) => out.info(line);
  const base = keep !== undefined ? resolve(keep) : mkdtempSync(join(tmpdir(), 'litetopic-demo-'));
  const removeTemporary = () => {
    if (keep === undefined) rmSync(base, { recursive: true, force: true });
  };
  // Ctrl-C still removes the temporary directory (the broker's lock file included).
  const onSignal = () => {
    out.endLine();
    removeTemporary();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const reports: BusReport[] = [];
  try {
    for (const engine of list) {
      const dir = list.length > 1 ? join(base, engine) : base;
      if (keep !== undefined) prepareDir(dir);
      say(
        `demo: ${engine} engine, ${formatCount(topics)} lite topics over ${seconds} s, data in ${dir}` +
          (keep === undefined ? ' (temporary)' : ''),
      );
      const report = await runBus({
        engine,
        dir,
        seconds,
        topics,
        progressMs: out.isTTY && !json ? 250 : 1000,
        onProgress: (p) => (json ? out.error(progressLine(engine, p)) : out.status(progressLine(engine, p))),
      });
      out.endLine();
      if (!json) out.info(`\n${summary(report, topics)}\n`);
      reports.push(report);
    }
    const [native, js] = reports;
    const both = list.length === 2 && native !== undefined && js !== undefined;
    if (json) {
      out.info(
        JSON.stringify({ reports, ...(both ? comparison(native, js) : { nativeOverJs: null, cpuJsOverNative: null }) }),
      );
    } else if (both) out.info(ratioLine(native, js));
    if (keep !== undefined) {
      // With both engines each wrote its own directory below the base: one inspect per engine.
      const dirs = list.length > 1 ? list.map((engine) => join(base, engine)) : [base];
      say(`data kept in ${base}; look at it with: ${dirs.map((dir) => `litetopic inspect ${dir}`).join(' and ')}`);
    }
    return reports.every((r) => r.drained) ? EXIT.OK : EXIT.FAILURE;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    removeTemporary();
  }
}

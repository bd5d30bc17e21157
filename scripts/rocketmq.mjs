#!/usr/bin/env node
/**
 * `npm run test:rocketmq`: runs the conformance suite against a real Apache RocketMQ 5.5.0 cluster
 * that this script starts and stops itself.
 *
 * 1. Fetches the jars named by rocketmq/pom.xml into a cache directory (once) with Maven.
 * 2. Re-runs itself inside a new user and network namespace (`unshare -rn`) that has only a loopback
 *    interface: RocketMQ 5.5.0 binds every interface whatever it is told, and there it can reach
 *    nothing but loopback. The tests run in the same namespace.
 * 3. Writes the configuration into a temporary directory, starts the name server, two brokers
 *    (broker-a and broker-b of one cluster, each with its own store) and the proxy in cluster mode,
 *    and waits for each to say it is up.
 * 4. Runs vitest on the conformance files with LITETOPIC_TEST_BACKEND=rocketmq (or the command given
 *    after `--`), then stops every JVM by its process group id, also on failure or SIGINT.
 *
 * Without Java or Maven it prints a note and exits 0, except under CI=true, where it fails.
 * Options: `--keep` keeps the temporary directory (logs, stores) for a post-mortem.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const VERSION = '5.5.0';
const cacheDir = process.env.LITETOPIC_ROCKETMQ_JARS ?? join(homedir(), '.cache', 'litetopic-rocketmq', VERSION);
const INSIDE = 'LITETOPIC_ROCKETMQ_NAMESPACE';

/** The test files that run against RocketMQ: the embedded broker's own behaviour tests, plus the two-broker scenario. */
const CONFORMANCE = [
  'test/broker.test.ts',
  'test/broker-pop.test.ts',
  'test/broker-consume.test.ts',
  'test/rocketmq-cluster.test.ts',
];

const NAMESRV_PORT = 9876;
const PROXY_GRPC_PORT = 8081;
const PROXY_REMOTING_PORT = 8080;
const BROKERS = [
  { name: 'broker-a', port: 10911 },
  { name: 'broker-b', port: 10921 },
];
/** Each JVM's heap; three or four of them share the machine with the tests. */
const HEAP = '-Xmx512m';
const STARTUP_TIMEOUT_MS = 120_000;

const args = process.argv.slice(2);
const keep = args.includes('--keep');
const separator = args.indexOf('--');
const command = separator === -1 ? undefined : args.slice(separator + 1);

function has(tool, versionFlag) {
  return spawnSync(tool, [versionFlag], { stdio: 'ignore' }).status === 0;
}

function skipOrFail(why) {
  if (process.env.CI === 'true') {
    console.error(`test:rocketmq: ${why}; CI needs it`);
    process.exit(1);
  }
  console.log(`test:rocketmq: skipped: ${why} (install Java 17 and Maven to run the RocketMQ conformance suite)`);
  process.exit(0);
}

function fetchJars() {
  const marker = join(cacheDir, `rocketmq-proxy-${VERSION}.jar`);
  if (existsSync(marker)) return;
  console.log(`test:rocketmq: fetching the RocketMQ ${VERSION} jars into ${cacheDir}`);
  const result = spawnSync(
    'mvn',
    [
      '-q',
      '-B',
      '-f',
      join(root, 'rocketmq', 'pom.xml'),
      'dependency:copy-dependencies',
      `-DoutputDirectory=${cacheDir}`,
    ],
    { stdio: 'inherit' },
  );
  if (result.status !== 0 || !existsSync(marker)) {
    console.error('test:rocketmq: Maven could not fetch the RocketMQ jars');
    process.exit(1);
  }
}

/** Outside the namespace: checks the tools, fetches the jars and runs this script again inside one. */
function outside() {
  if (!has('java', '-version')) skipOrFail('no java on PATH');
  if (!has('mvn', '-v')) skipOrFail('no mvn on PATH');
  if (!has('unshare', '--version')) skipOrFail('no unshare (util-linux) to keep RocketMQ on loopback');
  fetchJars();
  const child = spawn('unshare', ['-rn', process.execPath, fileURLToPath(import.meta.url), ...args], {
    stdio: 'inherit',
    env: { ...process.env, [INSIDE]: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128 + 1)));
}

/** The started JVMs: each leads its own process group, which `stop` signals. */
const started = [];

function startJvm(name, mainClass, jvmArgs, programArgs, dir, ready) {
  const logPath = join(dir, `${name}.out`);
  const child = spawn(
    'java',
    [
      HEAP,
      '-Xss512k',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      `-Duser.home=${join(dir, name)}`,
      ...jvmArgs,
      '-cp',
      `${cacheDir}/*`,
      mainClass,
      ...programArgs,
    ],
    { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ROCKETMQ_HOME: dir } },
  );
  started.push({ name, child });
  let output = '';
  return new Promise((resolveReady, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${STARTUP_TIMEOUT_MS} ms:\n${output.slice(-2000)}`)),
      STARTUP_TIMEOUT_MS,
    );
    const onData = (chunk) => {
      output += chunk.toString();
      writeFileSync(logPath, output);
      if (ready.test(output)) {
        clearTimeout(timer);
        resolveReady();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was up:\n${output.slice(-2000)}`));
    });
  });
}

function waitForPort(port) {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  return new Promise((resolveReady, reject) => {
    const attempt = () => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolveReady();
      });
      socket.on('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on port ${port}`));
        else setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}

/** Stops every started JVM by its process group id: SIGTERM, then SIGKILL for those still there. */
async function stop() {
  const alive = started.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  for (const { child } of alive) signalGroup(child.pid, 'SIGTERM');
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && alive.some(({ child }) => child.exitCode === null && child.signalCode === null)) {
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const { child } of alive) {
    if (child.exitCode === null && child.signalCode === null) signalGroup(child.pid, 'SIGKILL');
  }
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}

function brokerConfig(dir, broker) {
  const store = join(dir, broker.name);
  return [
    'brokerClusterName=DefaultCluster',
    `brokerName=${broker.name}`,
    'brokerId=0',
    `namesrvAddr=127.0.0.1:${NAMESRV_PORT}`,
    `listenPort=${broker.port}`,
    'brokerIP1=127.0.0.1',
    `storePathRootDir=${store}`,
    `storePathCommitLog=${join(store, 'commitlog')}`,
    'enableLmq=true',
    'enableMultiDispatch=true',
    // Topics and groups are created by litetopic's createTopic/createGroup, never on first use.
    'autoCreateTopicEnable=false',
    'autoCreateSubscriptionGroup=false',
    // The JVMs share a small machine with the tests: flow control (a send refused when it waited
    // this long in the broker's queue) is for overload, not for a busy test machine.
    'waitTimeMillsInSendQueue=2000',
    // Small preallocated files: a test store holds little.
    'mappedFileSizeCommitLog=67108864',
    'mappedFileSizeConsumeQueue=600000',
    'deleteWhen=04',
    'fileReservedTime=1',
    '',
  ].join('\n');
}

async function inside() {
  const up = spawnSync('ip', ['link', 'set', 'lo', 'up'], { stdio: 'inherit' });
  if (up.status !== 0) throw new Error('could not bring up loopback in the new network namespace');
  const dir = mkdtempSync(join(tmpdir(), 'litetopic-rocketmq-'));
  let exitCode = 1;
  /** The test command, while it runs. */
  let tests;
  const interrupted = () => {
    // The command first (it uses the cluster), then the JVMs; the directory goes unless --keep.
    if (tests !== undefined && tests.exitCode === null) tests.kill('SIGTERM');
    stop().finally(() => {
      if (!keep) rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', interrupted);
  process.on('SIGTERM', interrupted);
  try {
    const began = Date.now();
    await startJvm('namesrv', 'org.apache.rocketmq.namesrv.NamesrvStartup', [], [], dir, /boot success/);
    await Promise.all(
      BROKERS.map((broker) => {
        const conf = join(dir, `${broker.name}.conf`);
        writeFileSync(conf, brokerConfig(dir, broker));
        return startJvm(broker.name, 'org.apache.rocketmq.broker.BrokerStartup', [], ['-c', conf], dir, /boot success/);
      }),
    );
    const proxyConf = join(dir, 'rmq-proxy.json');
    writeFileSync(
      proxyConf,
      JSON.stringify({
        rocketMQClusterName: 'DefaultCluster',
        grpcServerPort: PROXY_GRPC_PORT,
        remotingListenPort: PROXY_REMOTING_PORT,
        // litetopic's POP takes any invisible time and wait (0: return at once); the proxy's
        // defaults (at least 10 s hidden, at least 5 s of long poll) would change what a POP means.
        minInvisibleTimeMillsForRecv: 0,
        grpcClientConsumerMinLongPollingTimeoutMillis: 0,
      }),
    );
    await startJvm(
      'proxy',
      'org.apache.rocketmq.proxy.ProxyStartup',
      [],
      ['-pm', 'cluster', '-pc', proxyConf, '-n', `127.0.0.1:${NAMESRV_PORT}`],
      dir,
      /startup successfully/,
    );
    await waitForPort(PROXY_GRPC_PORT);
    console.log(`test:rocketmq: cluster up in ${Date.now() - began} ms (namesrv, ${BROKERS.length} brokers, proxy)`);
    const run = command ?? ['npx', 'vitest', 'run', ...CONFORMANCE.filter((file) => existsSync(join(root, file)))];
    tests = spawn(run[0], run.slice(1), {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...process.env,
        LITETOPIC_TEST_BACKEND: 'rocketmq',
        LITETOPIC_ROCKETMQ_ENDPOINTS: `127.0.0.1:${PROXY_GRPC_PORT}`,
        LITETOPIC_ROCKETMQ_NAMESRV: `127.0.0.1:${NAMESRV_PORT}`,
      },
    });
    exitCode = await new Promise((r) => tests.on('exit', (code) => r(code ?? 1)));
  } catch (error) {
    console.error(`test:rocketmq: ${error instanceof Error ? error.message : String(error)}`);
    console.error(`test:rocketmq: logs in ${dir}: ${readdirSync(dir).join(', ')}`);
    exitCode = 1;
  } finally {
    await stop();
    if (!keep && exitCode === 0) rmSync(dir, { recursive: true, force: true });
    else console.log(`test:rocketmq: kept ${dir}`);
  }
  process.exit(exitCode);
}

if (process.env[INSIDE] === '1') await inside();
else outside();

/**
 * `Broker.connect` without a RocketMQ cluster: option checks, refusals, the status-to-error table,
 * the remoting admin client against a fake name server and broker speaking the remoting frame
 * format, and `DEPENDENCY_MISSING` in a child process where an optional package cannot be found.
 * The behaviour on a real cluster is the conformance suite's (`npm run test:rocketmq`).
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker, ERROR_CODES } from '../ts/index.js';
import { newMessageId } from '../ts/remote/message.js';
import { RemotingAdmin } from '../ts/remote/remoting.js';
import { statusError } from '../ts/remote/status.js';
import { ENGINES } from './engines.js';

interface Request {
  code: number;
  extFields: Record<string, string>;
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A TCP server answering remoting frames with `answer(request)`: [code, body]. */
async function fakeRemoting(
  answer: (request: Request) => [number, string],
): Promise<{ port: number; seen: Request[] }> {
  const seen: Request[] = [];
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
        const frame = buffered.subarray(4, 4 + buffered.readUInt32BE(0));
        buffered = buffered.subarray(4 + frame.length);
        const headerLength = frame.readUInt32BE(0) & 0xffffff;
        expect(frame.readUInt8(0)).toBe(0); // JSON serialization
        const header = JSON.parse(frame.subarray(4, 4 + headerLength).toString()) as Request & { opaque: number };
        const request = {
          code: header.code,
          extFields: header.extFields,
          body: frame.subarray(4 + headerLength).toString(),
        };
        seen.push(request);
        const [code, body] = answer(request);
        const out = Buffer.from(
          JSON.stringify({ code, opaque: header.opaque, flag: 1, remark: code === 0 ? null : 'refused' }),
        );
        const payload = Buffer.from(body);
        const prefix = Buffer.alloc(8);
        prefix.writeUInt32BE(4 + out.length + payload.length, 0);
        prefix.writeUInt32BE(out.length, 4);
        socket.write(Buffer.concat([prefix, out, payload]));
      }
    });
  });
  servers.push(server);
  server.on('close', () => {
    for (const socket of sockets) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, seen };
}

describe('Broker.connect', () => {
  it('refuses bad options and the features RocketMQ lacks, with typed errors', async () => {
    await expect(Broker.connect({ endpoints: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(Broker.connect({ endpoints: '127.0.0.1:1', namespace: 'a%b' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(Broker.connect({ endpoints: '127.0.0.1:1', dispatchGraceMs: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const broker = await Broker.connect({ endpoints: '127.0.0.1:1', nameServers: '127.0.0.1:1' });
    expect(broker.engine).toBe('rocketmq');
    expect(() => broker.createGroup('g', { bindTopic: 'agents', wildcard: true })).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED' }),
    );
    expect(() => broker.createGroup('g', { bindTopic: 'agents', keyShared: {} })).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED' }),
    );
    expect(() => broker.createTopic('bad name')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    await expect(broker.send('agents', { liteTopic: 'a b', body: 'x' })).rejects.toMatchObject({
      code: 'INVALID_LITE_TOPIC',
    });
    await broker.close();
    await expect(broker.send('agents', { liteTopic: 'a', body: 'x' })).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('registers its new error codes after the existing ones', () => {
    expect(ERROR_CODES.slice(-3)).toEqual(['DEPENDENCY_MISSING', 'UNSUPPORTED', 'REMOTE_ERROR']);
  });
});

describe('RocketMQ statuses', () => {
  it.each([
    ['TOPIC_NOT_FOUND', 'TOPIC_NOT_FOUND'],
    ['MESSAGE_PROPERTY_CONFLICT_WITH_TYPE', 'TOPIC_NOT_FOUND'],
    ['CONSUMER_GROUP_NOT_FOUND', 'GROUP_NOT_FOUND'],
    ['INVALID_RECEIPT_HANDLE', 'INVALID_RECEIPT'],
    ['ILLEGAL_LITE_TOPIC', 'INVALID_LITE_TOPIC'],
    ['LITE_TOPIC_QUOTA_EXCEEDED', 'QUOTA_EXCEEDED'],
    ['LITE_SUBSCRIPTION_QUOTA_EXCEEDED', 'QUOTA_EXCEEDED'],
    ['ILLEGAL_INVISIBLE_TIME', 'INVALID_ARGUMENT'],
    ['INTERNAL_SERVER_ERROR', 'REMOTE_ERROR'],
  ])('%s becomes %s', (status, code) => {
    expect(statusError({ code: status, message: 'm' }, 'call')).toMatchObject({ code });
  });

  it('names the quota RocketMQ refused', () => {
    expect(statusError({ code: 'LITE_SUBSCRIPTION_QUOTA_EXCEEDED', message: '' }, 'sync')).toMatchObject({
      quota: 'maxLiteTopicsPerClient',
    });
    expect(statusError({ code: 'LITE_TOPIC_QUOTA_EXCEEDED', message: '' }, 'send')).toMatchObject({
      quota: 'maxLiteTopicsPerBroker',
    });
  });
});

describe('message ids', () => {
  it('are unique 34-digit hex ids in the layout of RocketMQ clients', () => {
    const ids = Array.from({ length: 1000 }, () => newMessageId(Date.now()));
    for (const id of ids) expect(id).toMatch(/^01[0-9A-F]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('remoting admin', () => {
  it('creates the topic and the group on every master broker the name server lists', async () => {
    const brokerA = await fakeRemoting(() => [0, '']);
    const brokerB = await fakeRemoting(() => [0, '']);
    // fastjson writes numeric map keys bare, as the real name server does.
    const cluster = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:${brokerA.port}"}},"broker-b":{"brokerAddrs":{0:"127.0.0.1:${brokerB.port}",1:"127.0.0.1:1"}}}}`;
    const namesrv = await fakeRemoting((request) => (request.code === 106 ? [0, cluster] : [1, '']));
    const admin = new RemotingAdmin([`127.0.0.1:${namesrv.port}`]);
    try {
      await admin.createTopic({ name: 'agents', queues: 4, attributes: { 'message.type': 'LITE' } });
      await admin.createGroup({
        name: 'g',
        maxReconsumeTimes: 3,
        attributes: { 'lite.bind.topic': 'agents', 'lite.sub.model': 'Exclusive' },
      });
      for (const broker of [brokerA, brokerB]) {
        const [topic, group] = broker.seen;
        expect(topic).toMatchObject({
          code: 17,
          extFields: { topic: 'agents', readQueueNums: '4', writeQueueNums: '4', attributes: '+message.type=LITE' },
        });
        expect(group?.code).toBe(200);
        expect(JSON.parse(group?.body ?? '{}')).toMatchObject({
          groupName: 'g',
          retryMaxTimes: 3,
          attributes: { '+lite.bind.topic': 'agents', '+lite.sub.model': 'Exclusive' },
        });
      }
    } finally {
      admin.close();
    }
  });

  it('reports a refusal as REMOTE_ERROR and an unknown group as absent', async () => {
    const broker = await fakeRemoting((request) => (request.code === 352 ? [26, ''] : [1, '']));
    const cluster = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:${broker.port}"}}}}`;
    const namesrv = await fakeRemoting(() => [0, cluster]);
    const admin = new RemotingAdmin([`127.0.0.1:${namesrv.port}`]);
    try {
      await expect(admin.createTopic({ name: 't', queues: 1, attributes: {} })).rejects.toMatchObject({
        code: 'REMOTE_ERROR',
      });
      expect(await admin.group('nope')).toBeUndefined();
    } finally {
      admin.close();
    }
  });
});

const root = join(__dirname, '..');

describe.each(ENGINES)('without the optional packages (%s engine)', (engine) => {
  it.each(['@grpc/grpc-js', '@grpc/proto-loader', 'rocketmq-client-nodejs'])(
    'the embedded broker works; Broker.connect throws DEPENDENCY_MISSING naming %s',
    (missing) => {
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/without-peers.ts', missing, engine], {
        cwd: root,
        encoding: 'utf8',
      });
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({
        delivered: ['embedded'],
        error: { code: 'DEPENDENCY_MISSING', value: missing, typed: true },
      });
    },
  );
});

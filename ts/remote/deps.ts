/**
 * The optional packages `Broker.connect` needs, loaded on first use so that the embedded broker
 * never requires them:
 *
 * - `rocketmq-client-nodejs` (the official RocketMQ Node client): its protobuf definitions of the
 *   gRPC protocol, read from the installed package at run time (litetopic ships no copy). Its own
 *   `Producer` and `LitePushConsumer` are not used: the push consumer hides POP, acks and invisible
 *   times behind a listener, which litetopic's consumer exposes.
 * - `@grpc/grpc-js`: the gRPC transport.
 * - `@grpc/proto-loader`: turns those definitions into a client at run time.
 */
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { DependencyMissingError } from '../errors.js';

/** The parts of `@grpc/grpc-js` the remote client uses. */
export type GrpcModule = typeof import('@grpc/grpc-js');

export interface RemoteDependencies {
  grpc: GrpcModule;
  /** The `apache.rocketmq.v2.MessagingService` client constructor. */
  MessagingService: import('@grpc/grpc-js').ServiceClientConstructor;
}

const PROTO = 'rocketmq-client-nodejs/proto/apache/rocketmq/v2/service.proto';
const requireHere = createRequire(__filename);
let loaded: RemoteDependencies | undefined;

function load<T>(name: string, request: string = name): T {
  try {
    return requireHere(request) as T;
  } catch (cause) {
    throw new DependencyMissingError(
      `Broker.connect needs the optional package ${name}: npm install rocketmq-client-nodejs@1.0.8 @grpc/grpc-js@1.14.7 @grpc/proto-loader@0.8.1`,
      { value: name, cause },
    );
  }
}

/** Loads the packages once; throws `DependencyMissingError` (`DEPENDENCY_MISSING`) naming the first missing one. */
export function remoteDependencies(): RemoteDependencies {
  if (loaded !== undefined) return loaded;
  const grpc = load<GrpcModule>('@grpc/grpc-js');
  const protoLoader = load<typeof import('@grpc/proto-loader')>('@grpc/proto-loader');
  let protoPath: string;
  try {
    protoPath = requireHere.resolve(PROTO);
  } catch (cause) {
    throw new DependencyMissingError('Broker.connect needs the optional package rocketmq-client-nodejs', {
      value: 'rocketmq-client-nodejs',
      cause,
    });
  }
  const definition = protoLoader.loadSync(protoPath, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
    // service.proto imports "apache/rocketmq/v2/definition.proto" from the package's proto/ folder.
    includeDirs: [resolve(dirname(protoPath), '../../..')],
  });
  const root = grpc.loadPackageDefinition(definition) as unknown as {
    apache: { rocketmq: { v2: { MessagingService: import('@grpc/grpc-js').ServiceClientConstructor } } };
  };
  loaded = { grpc, MessagingService: root.apache.rocketmq.v2.MessagingService };
  return loaded;
}

/**
 * A thin client of RocketMQ's gRPC `MessagingService` (the proxy's port): one channel, the
 * transport headers every call carries (protocol, client id, date, request id, language), unary calls with a deadline, the server-streamed `ReceiveMessage` gathered into one
 * answer, and the bidirectional `Telemetry` stream. Status codes become typed errors in errors.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Client, ClientDuplexStream, Metadata, ServiceError } from '@grpc/grpc-js';
import { RemoteError } from '../errors.js';
import { type RemoteDependencies, remoteDependencies } from './deps.js';
import { checkStatus, type ProtoStatus } from './status.js';

/** The client version the proxy sees: a recent one, so it answers with the newest status codes. */
const CLIENT_VERSION = '5.1.0';

type Callback = (error: ServiceError | null, response: unknown) => void;
type UnaryMethod = (request: unknown, metadata: Metadata, options: { deadline: Date }, callback: Callback) => void;

export class GrpcClient {
  private readonly deps: RemoteDependencies;
  private readonly client: Client;
  private closed = false;

  constructor(
    readonly endpoint: string,
    readonly clientId: string,
    readonly requestTimeoutMs: number,
  ) {
    this.deps = remoteDependencies();
    this.client = new this.deps.MessagingService(endpoint, this.deps.grpc.credentials.createInsecure(), {
      'grpc.keepalive_time_ms': 30_000,
    });
  }

  metadata(): Metadata {
    const metadata = new this.deps.grpc.Metadata();
    metadata.set('x-mq-protocol', 'v2');
    metadata.set('x-mq-client-id', this.clientId);
    metadata.set('x-mq-date-time', requestDateTime(new Date()));
    metadata.set('x-mq-request-id', randomUUID());
    // The proxy maps this to its remoting language codes, which have no entry for Node.js.
    metadata.set('x-mq-language', 'HTTP');
    metadata.set('x-mq-client-version', CLIENT_VERSION);
    return metadata;
  }

  /** A unary call; its answer's `status` is checked (a non-OK status throws its typed error). */
  async call<T extends { status?: ProtoStatus | null }>(
    method: string,
    request: unknown,
    timeoutMs = this.requestTimeoutMs,
  ): Promise<T> {
    const response = await this.raw<T>(method, request, timeoutMs);
    checkStatus(response.status, method);
    return response;
  }

  /** A unary call whose answer the caller inspects itself (per-entry statuses). */
  raw<T>(method: string, request: unknown, timeoutMs = this.requestTimeoutMs): Promise<T> {
    if (this.closed) return Promise.reject(new RemoteError('the connection is closed', { status: 'CLOSED' }));
    const fn = (this.client as unknown as Record<string, UnaryMethod>)[method] as UnaryMethod;
    return new Promise<T>((resolve, reject) => {
      fn.call(
        this.client,
        request,
        this.metadata(),
        { deadline: new Date(Date.now() + timeoutMs) },
        (error, response) => {
          if (error !== null) reject(transportError(error, method));
          else resolve(response as T);
        },
      );
    });
  }

  /** `ReceiveMessage`: the stream's messages, after its closing status is checked. */
  receive<M>(request: unknown, timeoutMs: number): Promise<M[]> {
    if (this.closed) return Promise.reject(new RemoteError('the connection is closed', { status: 'CLOSED' }));
    const client = this.client as unknown as Record<
      string,
      (r: unknown, m: Metadata, o: object) => NodeJS.EventEmitter
    >;
    const stream = client.receiveMessage?.call(this.client, request, this.metadata(), {
      deadline: new Date(Date.now() + timeoutMs),
    }) as NodeJS.EventEmitter;
    const messages: M[] = [];
    let status: ProtoStatus | undefined;
    return new Promise<M[]>((resolve, reject) => {
      stream.on('data', (response: { content?: string; status?: ProtoStatus; message?: M }) => {
        if (response.content === 'message' && response.message !== undefined) messages.push(response.message);
        else if (response.content === 'status' && response.status !== undefined) status = response.status;
      });
      stream.on('error', (error: ServiceError) => reject(transportError(error, 'receiveMessage')));
      stream.on('end', () => {
        try {
          // MESSAGE_NOT_FOUND is RocketMQ's "nothing to deliver": an empty POP, not a failure.
          if (messages.length === 0 && status?.code !== 'MESSAGE_NOT_FOUND') checkStatus(status, 'receiveMessage');
          resolve(messages);
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  /** Opens the `Telemetry` stream (settings go up, server commands come down). */
  telemetry(): ClientDuplexStream<unknown, unknown> {
    const client = this.client as unknown as Record<string, (m: Metadata) => ClientDuplexStream<unknown, unknown>>;
    return client.telemetry?.call(this.client, this.metadata()) as ClientDuplexStream<unknown, unknown>;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }
}

/** `yyyyMMdd'T'HHmmss'Z'` in UTC, the format of the `x-mq-date-time` header. */
function requestDateTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

function transportError(error: ServiceError, method: string): RemoteError {
  const grpc = remoteDependencies().grpc;
  const name = grpc.status[error.code] ?? String(error.code);
  return new RemoteError(`${method}: ${error.details || error.message}`, { status: String(name), cause: error });
}

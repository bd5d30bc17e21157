/**
 * RocketMQ status codes (the `Code` enum of its gRPC protocol) as litetopic's typed errors: the
 * codes litetopic has a meaning for map to the same error the embedded broker raises
 * (docs/ROCKETMQ.md, "Errors"); any other non-OK status is a `RemoteError` carrying the code.
 */
import {
  GroupNotFoundError,
  InvalidArgumentError,
  InvalidLiteTopicError,
  InvalidReceiptError,
  QuotaExceededError,
  RemoteError,
  TopicNotFoundError,
} from '../errors.js';

export interface ProtoStatus {
  code: string;
  message: string;
}

/** Throws the typed error of a non-OK status; `what` names the call in the message. */
export function checkStatus(status: ProtoStatus | null | undefined, what: string): void {
  if (status === null || status === undefined || status.code === 'OK') return;
  throw statusError(status, what);
}

export function statusError(status: ProtoStatus, what: string): Error {
  const message = `${what}: ${status.code}: ${status.message}`;
  switch (status.code) {
    case 'TOPIC_NOT_FOUND':
    // The proxy checks a send's message type against the topic's first: an unknown topic has none
    // (UNSPECIFIED), another topic is not LITE. Either way there is no LITE parent of that name.
    case 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE':
      return new TopicNotFoundError(message, { value: subject(status.message) });
    case 'CONSUMER_GROUP_NOT_FOUND':
      return new GroupNotFoundError(message, { value: subject(status.message) });
    case 'INVALID_RECEIPT_HANDLE':
      return new InvalidReceiptError(message, { value: undefined });
    case 'ILLEGAL_LITE_TOPIC':
      return new InvalidLiteTopicError(message, { value: '', reason: 'INVALID_CHARACTER', position: 0 });
    case 'LITE_TOPIC_QUOTA_EXCEEDED':
      // The broker-wide count of lite topics (RocketMQ's maxLmqConsumeQueueNum); figures unknown here.
      return new QuotaExceededError(message, { quota: 'maxLiteTopicsPerBroker', limit: 0, actual: 0 });
    case 'LITE_SUBSCRIPTION_QUOTA_EXCEEDED':
      // The group's lite.sub.client.quota: lite topics one client may hold.
      return new QuotaExceededError(message, { quota: 'maxLiteTopicsPerClient', limit: 0, actual: 0 });
    case 'ILLEGAL_INVISIBLE_TIME':
    case 'ILLEGAL_POLLING_TIME':
    case 'ILLEGAL_OFFSET':
    case 'ILLEGAL_TOPIC':
    case 'ILLEGAL_CONSUMER_GROUP':
    case 'ILLEGAL_MESSAGE_KEY':
    case 'ILLEGAL_MESSAGE_TAG':
    case 'ILLEGAL_MESSAGE_PROPERTY_KEY':
    case 'MESSAGE_BODY_TOO_LARGE':
    case 'MESSAGE_PROPERTIES_TOO_LARGE':
      return new InvalidArgumentError(message);
    default:
      return new RemoteError(message, { status: status.code });
  }
}

/** The resource a RocketMQ "not found" message names, when it quotes one. */
function subject(message: string): string {
  return /\[([^\]]+)\]/.exec(message)?.[1] ?? message;
}

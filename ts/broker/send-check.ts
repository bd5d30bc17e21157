/**
 * What a send carries, checked before anything is stored or leaves the process: the same rules for
 * the embedded broker and `Broker.connect`.
 */
import { InvalidArgumentError } from '../errors.js';
import { checkLiteTopic } from './names.js';
import type { BrokerLimits } from './quota.js';
import type { SendMessage } from './types.js';

/** The lite topic of `message`, once its name, body, key, tag and properties are checked. */
export function checkSendMessage(message: SendMessage, limits: BrokerLimits): string {
  if (message === null || typeof message !== 'object') {
    throw new InvalidArgumentError('a message must be an object', { value: message });
  }
  const name = checkLiteTopic(message.liteTopic, limits);
  if (typeof message.body !== 'string' && !(message.body instanceof Uint8Array)) {
    throw new InvalidArgumentError('body must be a string or a Uint8Array', { value: message.body });
  }
  for (const field of ['key', 'tag'] as const) {
    const value = message[field];
    if (value !== undefined && typeof value !== 'string') {
      throw new InvalidArgumentError(`${field} must be a string`, { value });
    }
  }
  const properties = message.properties;
  if (properties !== undefined) {
    if (properties === null || typeof properties !== 'object') {
      throw new InvalidArgumentError('properties must be an object of strings', { value: properties });
    }
    for (const value of Object.values(properties)) {
      if (typeof value !== 'string') throw new InvalidArgumentError('property values must be strings', { value });
    }
  }
  return name;
}

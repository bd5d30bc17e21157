/**
 * Buffer views over an ArrayBuffer, made for every message a read decodes. `Buffer.from(arrayBuffer,
 * offset, length)` checks its arguments and dispatches on their types before it constructs the
 * view, which costs several times what the view itself does. `BufferView` constructs it directly: a subclass of Uint8Array
 * whose prototype chain runs through `Buffer.prototype`, so a view is a Buffer in every respect a
 * caller can see: `Buffer.isBuffer` and `instanceof Buffer` hold, every Buffer method is there and
 * `constructor` is `Buffer` (the subclass's own `constructor` property is removed).
 */
class BufferView extends Uint8Array {}
Object.setPrototypeOf(BufferView.prototype, Buffer.prototype);
Reflect.deleteProperty(BufferView.prototype, 'constructor');

/** A Buffer viewing `length` bytes of `buffer` from `offset`; the caller keeps them in bounds. */
export function bufferView(buffer: ArrayBufferLike, offset: number, length: number): Buffer {
  return new BufferView(buffer as ArrayBuffer, offset, length) as unknown as Buffer;
}

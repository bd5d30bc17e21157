/** Message ids: what a send returns and a POP hands out for each message. */
/** Character codes of the upper-case hex digits. */
const HEX_CODES = new Uint8Array([48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 65, 66, 67, 68, 69, 70]);
const TWO_32 = 0x1_0000_0000;
/** The digits of the id being built (ids are built one at a time, synchronously). */
const idCodes: number[] = new Array(16).fill(0);

/**
 * A message's id: its log position (a safe integer) as 16 upper-case hex digits, the same string as
 * `position.toString(16).toUpperCase().padStart(16, '0')` built in one allocation (one id is made
 * per send and per delivery).
 */
export function messageId(position: number): string {
  let high = Math.floor(position / TWO_32);
  let low = position - high * TWO_32;
  for (let i = 15; i >= 8; i--) {
    idCodes[i] = HEX_CODES[low & 15] as number;
    low >>>= 4;
  }
  for (let i = 7; i >= 0; i--) {
    idCodes[i] = HEX_CODES[high & 15] as number;
    high >>>= 4;
  }
  return String.fromCharCode.apply(null, idCodes);
}

/** A key (hex of its bytes) as the console shows it: printable ASCII as text, anything else as 0x-hex; long keys cut. */

/** Characters of a key shown before it is cut with an ellipsis. */
const KEY_SHOWN_MAX_CHARS = 48;

export function keyText(hex: string): string {
  let text = '';
  for (let i = 0; i + 1 < hex.length; i += 2) {
    const byte = parseInt(hex.slice(i, i + 2), 16);
    if (byte < 0x20 || byte > 0x7e) return cut(`0x${hex}`);
    text += String.fromCharCode(byte);
  }
  return cut(text);
}

function cut(text: string): string {
  return text.length <= KEY_SHOWN_MAX_CHARS ? text : `${text.slice(0, KEY_SHOWN_MAX_CHARS - 1)}…`;
}

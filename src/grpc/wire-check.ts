/**
 * A strict walk over protobuf wire format. protobufjs decodes leniently: a length running past the end,
 * a field of the wrong wire type or a string that is not UTF-8 still decode to some message. The health
 * requests are small, so every request is walked once before it is decoded and refused when it is not a
 * well-formed message (the caller answers INVALID_ARGUMENT).
 */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Wire type 2 (length-delimited) fields that hold a proto3 `string`, by field number. */
export type StringFields = ReadonlySet<number>;

/** Why `bytes` is not a well-formed message with these string fields, or undefined when it is. */
export function wireProblem(bytes: Uint8Array, strings: StringFields): string | undefined {
  let at = 0;
  const varint = (): number | undefined => {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (at >= bytes.length) return undefined;
      const b = bytes[at++]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
    return undefined;
  };
  while (at < bytes.length) {
    const tag = varint();
    if (tag === undefined) return `truncated field tag at byte ${at}`;
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0) return 'field number 0';
    switch (wireType) {
      case 0:
        if (varint() === undefined) return `truncated varint in field ${field}`;
        break;
      case 1:
      case 5: {
        const size = wireType === 1 ? 8 : 4;
        if (at + size > bytes.length) return `truncated fixed-size field ${field}`;
        at += size;
        break;
      }
      case 2: {
        const length = varint();
        if (length === undefined || at + length > bytes.length) return `length of field ${field} runs past the end of the message`;
        if (strings.has(field)) {
          try {
            utf8.decode(bytes.subarray(at, at + length));
          } catch {
            return `string field ${field} is not valid UTF-8`;
          }
        }
        at += length;
        break;
      }
      default:
        return `field ${field} has wire type ${wireType}, which this message does not use`;
    }
    if (strings.has(field) && wireType !== 2) return `field ${field} must be a string (wire type 2), not wire type ${wireType}`;
  }
  return undefined;
}

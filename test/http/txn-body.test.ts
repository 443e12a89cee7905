// Goal: the transaction body decoder (src/http/txn-body.ts) on its own — integers keep every digit past 2^53
// and strings are never rewritten; any body either decodes into operations or is refused with a catalogue
// error (400/413), never a crash; and the texts of Go's decoder for the type errors clients meet.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { RegistryError } from '../../src/domain/errors.ts';
import { parseExact, txnOperations } from '../../src/http/txn-body.ts';

const body = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
const refusal = (v: unknown): RegistryError => {
  try {
    txnOperations(body(v));
  } catch (err) {
    if (err instanceof RegistryError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('parseExact', () => {
  test('big integers keep their digits; strings and small numbers are JSON.parse\'s', () => {
    const text = '[{"KV":{"Flags":18446744073709551615,"Index":3304740253564472344,"Key":"1234567890123456789 \\" 99999999999999999","Value":null}},1.5,-2e3]';
    const parsed = parseExact(text) as any[];
    expect(parsed[0].KV.Key).toBe('1234567890123456789 " 99999999999999999');
    expect([parsed[1], parsed[2]]).toEqual([1.5, -2000]);
    const [op] = txnOperations(Buffer.from(text.replace(',1.5,-2e3', '')));
    expect([op!.flags, op!.index]).toEqual(['18446744073709551615', '3304740253564472344']);
  });

  test('no string passes for a number: a key or flags text that looks like the decoder\'s own mark is a string', () => {
    const key = '\u0000uint:5';
    // A big integer in the same body makes the decoder rewrite numbers.
    const text = JSON.stringify([{ KV: { Verb: 'set', Key: key, Index: 0 } }]).replace('"Index":0', '"Index":1234567890123456');
    const [op] = txnOperations(Buffer.from(text));
    expect(op!.key).toBe(key);
    expect(refusal(`[{"KV":{"Verb":"set","Key":"k","Flags":"\\u0000uint:5","Index":1234567890123456}}]`).message)
      .toMatch(/cannot unmarshal string into Go struct field KVTxnOp.KV.Flags of type uint64/);
  });

  test('equals JSON.parse on any JSON without big integers', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v);
      fc.pre(!/\d{16}/.test(text));
      expect(parseExact(text)).toEqual(JSON.parse(text));
    }));
  });
});

describe('txnOperations', () => {
  test('any JSON body decodes or is refused with a catalogue error', () => {
    const opLike = fc.record({ KV: fc.dictionary(fc.constantFrom('Verb', 'Key', 'Value', 'Flags', 'Index', 'Session', 'flags', 'x'), fc.jsonValue()) });
    fc.assert(fc.property(fc.oneof(fc.jsonValue(), fc.array(fc.oneof(opLike, fc.jsonValue()), { maxLength: 70 })), (v) => {
      try {
        const ops = txnOperations(body(v));
        expect(ops.every((op) => /^\d+$/.test(op.flags) && /^\d+$/.test(op.index) && typeof op.key === 'string')).toBe(true);
      } catch (err) {
        expect(err).toBeInstanceOf(RegistryError);
        expect([400, 413]).toContain((err as RegistryError).status);
      }
    }));
  });

  test('bytes that are not JSON are refused, not thrown', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      try {
        txnOperations(Buffer.from(bytes));
      } catch (err) {
        expect(err).toBeInstanceOf(RegistryError);
      }
    }));
  });

  test('Go decoder texts', () => {
    expect(refusal('').consulText).toBe('Failed to parse body: EOF');
    expect(refusal({}).consulText).toBe('Failed to parse body: json: cannot unmarshal object into Go value of type api.TxnOps');
    expect(refusal([1]).consulText).toBe('Failed to parse body: json: cannot unmarshal number into Go value of type api.TxnOp');
    expect(refusal([{ KV: 'x' }]).consulText).toBe('Failed to parse body: json: cannot unmarshal string into Go struct field TxnOp.KV of type api.KVTxnOp');
    expect(refusal([{ KV: { Key: 1 } }]).consulText).toBe('Failed to parse body: json: cannot unmarshal number into Go struct field KVTxnOp.KV.Key of type string');
    expect(refusal([{ KV: { Verb: true } }]).consulText).toBe('Failed to parse body: json: cannot unmarshal bool into Go struct field KVTxnOp.KV.Verb of type api.KVOp');
    expect(refusal([{ KV: { Value: [1] } }]).consulText).toBe('Failed to parse body: json: cannot unmarshal array into Go struct field KVTxnOp.KV.Value of type []uint8');
    expect(refusal([{ KV: { Index: 1.5 } }]).consulText).toBe('Failed to parse body: json: cannot unmarshal number 1.5 into Go struct field KVTxnOp.KV.Index of type uint64');
    expect(refusal('[{"KV":{"Flags":18446744073709551616}}]').consulText)
      .toBe('Failed to parse body: json: cannot unmarshal number 18446744073709551616 into Go struct field KVTxnOp.KV.Flags of type uint64');
    expect(refusal([{ KV: { Value: 'abc' } }]).consulText).toBe('Failed to parse body: illegal base64 data at input byte 0');
  });

  test('null is the zero value; null body is no operations; an empty Value is none', () => {
    expect(txnOperations(body('null'))).toEqual([]);
    expect(txnOperations(body([{ KV: { Verb: null, Key: 'k', Value: '', Flags: null, Session: null } }]))).toEqual([
      { verb: '', key: 'k', value: null, flags: '0', index: '0', session: '' },
    ]);
  });
});

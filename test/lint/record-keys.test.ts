// Goal: the house rule against keyed assignment into `{}` reports every way a client-chosen key named
// `__proto__` could set an object's prototype instead of adding an entry (computed assignment into an
// object created as `{}`, typed or not, and Object.assign into one), and leaves alone objects built
// with Object.fromEntries, a spread or Object.create(null), literal keys, arrays and Maps.
import { RuleTester } from 'eslint';
import { describe, it } from 'vitest';
import tseslint from 'typescript-eslint';
import recordKeys from '../../eslint/record-keys.js';

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

new RuleTester({ languageOptions: { parser: tseslint.parser } }).run('house/record-keys', recordKeys, {
  valid: [
    { code: 'const out = Object.fromEntries(pairs);' },
    { code: 'const out: Record<string, number> = Object.create(null); out[name] = 1;' },
    { code: 'const out = { ...raw }; const copy = Object.assign({}, { a: 1 });' },
    { code: "const out: Record<string, number> = {}; out['Accept'] = 1; out.User = 2;" },
    { code: 'const list: number[] = []; list[i] = 1;' },
    { code: 'const seen = new Map(); seen.set(name, 1);' },
    // an object with properties from the start is a structure, not a name-keyed record
    { code: 'const o = { a: 1 }; o[k] = 2;' },
    // a parameter or a reassigned variable is not known to be {}
    { code: 'function f(o: Record<string, number>) { o[k] = 1; }' },
    { code: 'let o = {}; o = make(); o[k] = 1;' },
  ],
  invalid: [
    { code: 'const out = {}; out[name] = 1;', errors: [{ messageId: 'computedKey', data: { name: 'out' } }] },
    { code: 'const out: Record<string, unknown> = {}; for (const [k, v] of entries) out[k] = v;', errors: [{ messageId: 'computedKey' }] },
    { code: 'const out = {} as Record<string, number>; function put(k: string) { out[k] = 1; }', errors: [{ messageId: 'computedKey' }] },
    { code: "const out = {}; out['__proto__'] = x;", errors: [{ messageId: 'computedKey' }] },
    { code: 'const meta = {}; Object.assign(meta, raw);', errors: [{ messageId: 'assign' }] },
    { code: 'const copy = Object.assign({}, raw);', errors: [{ messageId: 'assign' }] },
  ],
});

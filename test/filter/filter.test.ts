// Goal: the ?filter= language of consul-compat.md §5 (go-bexpr v0.1.2): every §5 example both true and
// false, precedence, the per-type operator and coercion rules, missing map keys, implicit ANY over a
// health entry's Checks (and how it differs from `not`), string escapes (bexpr's error texts: errors.test.ts).
import { describe, expect, test } from 'vitest';
import {
  agentServiceSchema,
  catalogServiceSchema,
  checkSchema,
  compileFilter,
  healthEntrySchema,
  memberSchema,
  nodeSchema,
  type Schema,
} from '../../src/filter/index.ts';
import { check, compileError, entry, prefix, run } from './support.ts';

describe('§5 examples, each true on one record and false on another', () => {
  const cases: [string, Schema, unknown, unknown][] = [
    ['ServiceName == "web"', checkSchema, check(), check({ ServiceName: 'api' })],
    ['ServiceID == web', checkSchema, check({ ServiceID: 'web' }), check({ ServiceID: 'web-1' })],
    ['Status != passing and Type == ttl', checkSchema, check({ Status: 'critical' }), check({ Status: 'passing' })],
    ['"primary" in Service.Tags', healthEntrySchema, entry(), entry({ Tags: ['v1'] })],
    ['Service.Tags contains "v1"', healthEntrySchema, entry(), entry({ Tags: ['v10'] })],
    ['Service.Meta.env == prod', healthEntrySchema, entry(), entry({ Meta: { env: 'dev' } })],
    ['Node.Meta["rack"] is not empty', healthEntrySchema, entry(), entry({}, [], { Meta: { rack: '' } })],
    ['Checks.Status == critical', healthEntrySchema, entry({}, [check(), check({ Status: 'critical' })]), entry()],
    ['Name matches "^api-[0-9]+$"', checkSchema, check({ Name: 'api-12' }), check({ Name: 'api-12b' })],
    ['not (Status == passing or Status == warning)', checkSchema, check({ Status: 'critical' }), check({ Status: 'warning' })],
    ['Checks.Status==passing', healthEntrySchema, entry(), entry({}, [check({ Status: 'warning' })])],
  ];
  test.each(cases)('%s', (expression, schema, yes, no) => {
    const filter = compileFilter(expression, schema);
    expect(filter(yes)).toBe(true);
    expect(filter(no)).toBe(false);
  });

  test('the second clause of an and decides too', () => {
    expect(run('Status != passing and Type == ttl', checkSchema, check({ Status: 'critical', Type: 'http' }))).toBe(false);
  });
});

describe('precedence: not > and > or, parentheses', () => {
  test('and binds tighter than or', () => {
    // (passing or warning) and http would be false here; passing or (warning and http) is true.
    expect(run('Status == passing or Status == warning and Type == http', checkSchema, check())).toBe(true);
    expect(run('(Status == passing or Status == warning) and Type == http', checkSchema, check())).toBe(false);
  });

  test('not binds tighter than and', () => {
    // (not passing) and http is false; not (passing and http) would be true.
    expect(run('not Status == passing and Type == http', checkSchema, check())).toBe(false);
    expect(run('not (Status == passing and Type == http)', checkSchema, check())).toBe(true);
  });

  test('a parenthesised whole, nested parentheses, double not', () => {
    expect(run('(Status == passing)', checkSchema, check())).toBe(true);
    expect(run('((Status == passing) and ((Type == ttl)))', checkSchema, check())).toBe(true);
    expect(run('not not Status == passing', checkSchema, check())).toBe(true);
    expect(run('not not not Status == passing', checkSchema, check())).toBe(false);
  });

  test('long chains mix and/or left to right', () => {
    const filter = compileFilter('Status == a or Status == b or Status == passing and Type == ttl or Status == c', checkSchema);
    expect(filter(check())).toBe(true);
    expect(filter(check({ Type: 'http' }))).toBe(false);
  });
});

describe('whitespace and values', () => {
  test('whitespace is free outside strings, and not needed around == and !=', () => {
    expect(run('\t Status\r\n==\npassing  ', checkSchema, check())).toBe(true);
    expect(run('Status!=passing', checkSchema, check())).toBe(false);
    expect(run('  ( Status == passing )  ', checkSchema, check())).toBe(true);
  });

  test('bare words are literal text, including dotted and indexed selector shapes', () => {
    expect(run('ServiceID == web_1', checkSchema, check({ ServiceID: 'web_1' }))).toBe(true);
    expect(run('ServiceID == web.v1', checkSchema, check({ ServiceID: 'web.v1' }))).toBe(true);
    expect(run('ServiceID == web["v1"]', checkSchema, check({ ServiceID: 'web.v1' }))).toBe(true);
    expect(run('Notes == and', checkSchema, check({ Notes: 'and' }))).toBe(true);
  });

  test('numbers are values; quoted values may hold - : and dots', () => {
    expect(run('Output == -1.5', checkSchema, check({ Output: '-1.5' }))).toBe(true);
    expect(run('Node == "host-name"', checkSchema, check({ Node: 'host-name' }))).toBe(true);
    expect(run('Address == "10.0.0.1"', nodeSchema, { Address: '10.0.0.1' })).toBe(true);
    expect(run('Output == "a:b"', checkSchema, check({ Output: 'a:b' }))).toBe(true);
  });

  test('double-quoted strings go through Go unquoting', () => {
    const cases: [string, string][] = [
      ['"line1\\nline2"', 'line1\nline2'],
      ['"tab\\there"', 'tab\there'],
      ['"back\\\\slash"', 'back\\slash'],
      ['"\\u00e9t\\u00e9"', 'été'],
      ['"\\U0001F600"', '😀'],
      ['"\\x41\\101"', 'AA'],
      ['"\\xc3\\xa9"', 'é'],
      ['"été"', 'été'],
    ];
    for (const [literal, text] of cases) expect(run(`Output == ${literal}`, checkSchema, check({ Output: text }))).toBe(true);
  });

  test('backtick strings are raw and may hold double quotes', () => {
    expect(run('Output == `a\\nb`', checkSchema, check({ Output: 'a\\nb' }))).toBe(true);
    expect(run('Output == `say "hi"`', checkSchema, check({ Output: 'say "hi"' }))).toBe(true);
    expect(run('Output == `two\r\nlines`', checkSchema, check({ Output: 'two\nlines' }))).toBe(true); // Go drops CR
  });

  test('an index may use either string form', () => {
    expect(run('Service.Meta[`env`] == prod', healthEntrySchema, entry())).toBe(true);
    expect(run('Service.Meta[ "env" ] == prod', healthEntrySchema, entry())).toBe(true);
    expect(run('Node.Meta["consul-network-segment"] == ""', healthEntrySchema, entry())).toBe(true);
  });
});

describe('string fields', () => {
  test('in / contains are substring tests, in either order', () => {
    expect(run('"we" in ServiceName', checkSchema, check())).toBe(true);
    expect(run('ServiceName contains eb', checkSchema, check())).toBe(true);
    expect(run('ServiceName not contains eb', checkSchema, check())).toBe(false);
    expect(run('"x" not in ServiceName', checkSchema, check())).toBe(true);
  });

  test('matches is unanchored; RE2 flag groups and escapes work', () => {
    expect(run('Name matches "eb c"', checkSchema, check())).toBe(true);
    expect(run('Name not matches "^eb"', checkSchema, check())).toBe(true);
    expect(run('Name matches "(?i)^WEB"', checkSchema, check())).toBe(true);
    expect(run('Name matches `web\\ check`', checkSchema, check())).toBe(true);
    expect(run('Name matches `^web\\-`', checkSchema, check())).toBe(false);
  });

  test('a missing field is its zero value', () => {
    expect(run('Notes == ""', checkSchema, { Status: 'passing' })).toBe(true);
    expect(run('ExposedPort == 0', checkSchema, {})).toBe(true);
    expect(run('ServiceTags is empty', checkSchema, { ServiceTags: null })).toBe(true);
    expect(run('Service.Weights.Passing == 0', healthEntrySchema, { Service: {} })).toBe(true);
    expect(run('Status == ""', checkSchema, null)).toBe(true);
  });
});

describe('lists and maps', () => {
  test('string lists: element equality, emptiness', () => {
    expect(run('"prim" in ServiceTags', checkSchema, check())).toBe(false);
    expect(run('ServiceTags contains primary', checkSchema, check())).toBe(true);
    expect(run('primary not in ServiceTags', checkSchema, check())).toBe(false);
    expect(run('ServiceTags is empty', checkSchema, check({ ServiceTags: [] }))).toBe(true);
    expect(run('ServiceTags is not empty', checkSchema, check())).toBe(true);
  });

  test('string maps: key presence, emptiness (null is empty)', () => {
    expect(run('env in Service.Meta', healthEntrySchema, entry())).toBe(true);
    expect(run('prod in Service.Meta', healthEntrySchema, entry())).toBe(false);
    expect(run('env not in Service.Meta', healthEntrySchema, entry({ Meta: null }))).toBe(true);
    expect(run('Service.Meta is empty', healthEntrySchema, entry({ Meta: null }))).toBe(true);
    expect(run('Service.Meta is not empty', healthEntrySchema, entry())).toBe(true);
  });

  test('map values take string operators; a present empty value is empty', () => {
    expect(run('Service.Meta.env contains ro', healthEntrySchema, entry())).toBe(true);
    expect(run('Service.Meta.env matches "^p"', healthEntrySchema, entry())).toBe(true);
    expect(run('Node.Meta["consul-network-segment"] is empty', healthEntrySchema, entry())).toBe(true);
  });

  test('a missing key: ==, contains, in, is not empty, matches are false; !=, not …, is empty are true', () => {
    const record = entry({ Meta: { env: 'prod' } });
    const cases: [string, boolean][] = [
      ['Service.Meta.zone == a', false],
      ['Service.Meta.zone contains a', false],
      ['a in Service.Meta.zone', false],
      ['Service.Meta.zone is not empty', false],
      ['Service.Meta.zone matches ".*"', false],
      ['Service.Meta.zone != a', true],
      ['Service.Meta.zone not contains a', true],
      ['a not in Service.Meta.zone', true],
      ['Service.Meta.zone not matches ".*"', true],
      ['Service.Meta.zone is empty', true],
    ];
    for (const [expression, result] of cases) {
      expect(run(expression, healthEntrySchema, record), expression).toBe(result);
      expect(run(expression, healthEntrySchema, entry({ Meta: null })), `${expression} on null Meta`).toBe(result);
    }
  });

  test('a map key named like an Object.prototype member is just a missing key', () => {
    expect(run('Service.Meta.constructor == x', healthEntrySchema, entry())).toBe(false);
    expect(run('"toString" in Service.Meta', healthEntrySchema, entry())).toBe(false);
  });
});

describe('health entry Checks: implicit ANY', () => {
  const mixed = entry({}, [check(), check({ Status: 'critical' })]);
  const allPassing = entry({}, [check(), check()]);
  const none = entry({}, []);

  test('== and != each hold if any one check satisfies them', () => {
    expect(run('Checks.Status == passing', healthEntrySchema, mixed)).toBe(true);
    expect(run('Checks.Status != passing', healthEntrySchema, mixed)).toBe(true);
    expect(run('Checks.Status != passing', healthEntrySchema, allPassing)).toBe(false);
    expect(run('Checks.Status == warning', healthEntrySchema, mixed)).toBe(false);
  });

  test('!= is not the same as not ==', () => {
    expect(run('not Checks.Status == passing', healthEntrySchema, mixed)).toBe(false);
    expect(run('Checks.Status != passing', healthEntrySchema, none)).toBe(false);
    expect(run('not Checks.Status == passing', healthEntrySchema, none)).toBe(true);
  });

  test('sub-selectors reach list fields of each check; the list itself is (not) empty', () => {
    const tagged = entry({}, [check({ ServiceTags: [] }), check({ ServiceTags: ['v2'] })]);
    expect(run('Checks.ServiceTags contains v2', healthEntrySchema, tagged)).toBe(true);
    expect(run('Checks.ServiceTags is empty', healthEntrySchema, tagged)).toBe(true);
    expect(run('Checks is empty', healthEntrySchema, none)).toBe(true);
    expect(run('Checks is not empty', healthEntrySchema, mixed)).toBe(true);
  });
});

describe('int, uint and bool fields: == and != with Go coercion', () => {
  test('ints: decimal, negative, quoted 0x/0o/0b and underscores', () => {
    expect(run('ExposedPort == 8080', checkSchema, check({ ExposedPort: 8080 }))).toBe(true);
    expect(run('ExposedPort != 8080', checkSchema, check({ ExposedPort: 8080 }))).toBe(false);
    expect(run('ExposedPort == "0x1F90"', checkSchema, check({ ExposedPort: 8080 }))).toBe(true);
    expect(run('ExposedPort == "0o17620"', checkSchema, check({ ExposedPort: 8080 }))).toBe(true);
    expect(run('ExposedPort == "8_080"', checkSchema, check({ ExposedPort: 8080 }))).toBe(true);
    expect(run('ExposedPort == -1', checkSchema, check({ ExposedPort: -1 }))).toBe(true);
    expect(run('Service.Weights.Passing == 3', healthEntrySchema, entry({ Weights: { Passing: 3, Warning: 1 } }))).toBe(true);
  });

  test('Go integer syntax at the edges', () => {
    expect(run('ExposedPort == "-0x10"', checkSchema, check({ ExposedPort: -16 }))).toBe(true);
    expect(run('ExposedPort == "0b101"', checkSchema, check({ ExposedPort: 5 }))).toBe(true);
    expect(run('ExposedPort == "017"', checkSchema, check({ ExposedPort: 15 }))).toBe(true); // a leading 0 is octal
    expect(run('ExposedPort == "+0"', checkSchema, check())).toBe(true);
    for (const bad of ['"08"', '"0x"', '"1__0"', '"_1"', '"1_"', '" 1"']) {
      expect(compileError(`ExposedPort == ${bad}`).detail, bad).toMatch(/strconv\.ParseInt: parsing .*: invalid syntax$/);
    }
  });

  test('floats, in a schema of one\'s own', () => {
    const schema: Schema = { Ratio: 'float' };
    expect(run('Ratio == 0.5', schema, { Ratio: 0.5 })).toBe(true);
    expect(run('Ratio == "5e-1"', schema, { Ratio: 0.5 })).toBe(true);
    expect(run('Ratio == "0x1p-1"', schema, { Ratio: 0.5 })).toBe(true);
    expect(run('Ratio == "-Inf"', schema, { Ratio: -Infinity })).toBe(true);
    expect(run('Ratio != 0', schema, {})).toBe(false);
    expect(compileError('Ratio == abc', schema).detail).toBe(
      'Failed to coerce value "abc" for selector ["Ratio"]: strconv.ParseFloat: parsing "abc": invalid syntax',
    );
    expect(compileError('Ratio == "1e999"', schema).detail).toMatch(/value out of range$/);
  });

  test('uints and bools', () => {
    expect(run('Port == 8301 and Status == 1', memberSchema, { Port: 8301, Status: 1 })).toBe(true);
    for (const word of ['1', 't', 'T', 'TRUE', 'true', 'True']) {
      expect(run(`Service.EnableTagOverride == ${word}`, healthEntrySchema, entry({ EnableTagOverride: true }))).toBe(true);
    }
    for (const word of ['0', 'f', 'F', 'FALSE', 'false', 'False']) {
      expect(run(`Service.EnableTagOverride == ${word}`, healthEntrySchema, entry())).toBe(true);
    }
    expect(run('Service.EnableTagOverride != true', healthEntrySchema, entry())).toBe(true);
  });

  test('a value that does not coerce is an error naming Go\'s reason', () => {
    const cases: [string, Schema, string][] = [
      ['ExposedPort == 80.5', checkSchema, 'value "80.5" for selector ["ExposedPort"]: strconv.ParseInt: parsing "80.5": invalid syntax'],
      ['ExposedPort == web', checkSchema, 'value "web" for selector ["ExposedPort"]: strconv.ParseInt: parsing "web": invalid syntax'],
      [
        'ExposedPort == 9223372036854775808',
        checkSchema,
        'value "9223372036854775808" for selector ["ExposedPort"]: strconv.ParseInt: parsing "9223372036854775808": value out of range',
      ],
      ['Port == -1', memberSchema, 'value "-1" for selector ["Port"]: strconv.ParseUint: parsing "-1": invalid syntax'],
      [
        'Service.EnableTagOverride == yes',
        healthEntrySchema,
        'value "yes" for selector ["Service" "EnableTagOverride"]: strconv.ParseBool: parsing "yes": invalid syntax',
      ],
    ];
    for (const [expression, schema, detail] of cases) {
      const error = compileError(expression, schema);
      expect(error.message).toBe(`${prefix}Failed to coerce ${detail}`);
      expect(error.expected?.length).toBeGreaterThan(0);
    }
    expect(compileError('ExposedPort == 80.5').position).toEqual({ line: 1, column: 16, offset: 15 });
  });
});

describe('ready-made schemas', () => {
  test('catalog, agent, node and member selectors', () => {
    const serviceNode = {
      Node: 'n1', ServiceID: 'web-1', ServiceName: 'web', ServiceTags: ['v1'], ServicePort: 80, NodeMeta: { rack: 'r1' },
      ServiceWeights: { Passing: 1, Warning: 1 }, ServiceProxy: { DestinationServiceName: 'web' }, ServiceConnect: { Native: true },
    };
    const sidecar = { Proxy: { MeshGateway: { Mode: 'local' } } };
    const node = { Meta: { 'consul-version': '1.21.0' }, TaggedAddresses: { lan: '10.0.0.1' } };
    const member = { Tags: { role: 'consul' }, ProtocolCur: 2 };
    const cases: [string, Schema, unknown][] = [
      ['ServiceWeights.Passing == 1 and NodeMeta.rack == r1 and v1 in ServiceTags', catalogServiceSchema, serviceNode],
      ['ServiceProxy.DestinationServiceName == web and ServiceConnect.Native == true', catalogServiceSchema, serviceNode],
      ['Proxy.MeshGateway.Mode == local and Proxy.Expose.Checks == false', agentServiceSchema, sidecar],
      ['Meta["consul-version"] is not empty and TaggedAddresses.lan == "10.0.0.1"', nodeSchema, node],
      ['Tags.role == consul and ProtocolCur == 2', memberSchema, member],
    ];
    for (const [expression, schema, record] of cases) expect(run(expression, schema, record), expression).toBe(true);
  });

  test('they cannot be edited in place', () => {
    expect(Object.isFrozen(checkSchema)).toBe(true);
    expect(Object.isFrozen((healthEntrySchema.Checks as { structList: Schema }).structList)).toBe(true);
  });
});

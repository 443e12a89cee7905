// Goal: a bad `?filter=` through a started agent answers the conventions' 1009 shape, details
// `{filter: ["Syntax:<text>"]}` (field → ["Rule:text"]), the evaluator's text naming the line, column and
// offset where the expression went wrong and what could come there; the consul dialect answers Consul's 500.
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
let seed: Client;
let consul: Client;

withAgent((a) => { seed = client(a); });
withAgent((a) => { consul = client(a); }, { args: ['--dialect', 'consul'] });

const filter = (expression: string) => `filter=${encodeURIComponent(expression)}`;

describe.concurrent('a filter that does not parse', () => {
  test('seed: 400/1009 with details {filter: ["Syntax:<text with line:column (offset)>"]} and no other detail', async () => {
    for (const path of ['/v1/health/state/any', '/v1/agent/checks', '/v1/catalog/nodes']) {
      const body = expectError(await seed.get(`${path}?${filter('Foo')}`), 400, 1009);
      expect(body.details, path).toEqual({ filter: [`Syntax:${body.message}`] });
      expect(body.message, path).toMatch(/1:4 \(3\): no match found, expected: "!=", /);
    }
    // A selector the schema does not know has no position; the rule text is the evaluator's all the same.
    const unknown = expectError(await seed.get(`/v1/health/state/any?${filter('Foo == bar')}`), 400, 1009);
    expect(unknown.details).toEqual({ filter: [`Syntax:${unknown.message}`] });
  });

  test('consul: 500 with the evaluator\'s text', async () => {
    const r = await consul.get(`/v1/health/state/any?${filter('Foo')}`);
    expect(r.status).toBe(500);
    expect(r.text).toMatch(/^Failed to create boolean expression evaluator: 1:4 \(3\): no match found, expected: /);
  });
});

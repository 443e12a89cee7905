// Goal: Stop behaves as an AbortSignal does for the waits that take one: listeners run once, in order, on
// the first abort only; a removed listener or one added after the stop never runs; and an AbortSignal is a
// StopSignal too (the same waits take either).
import { expect, test } from 'vitest';
import { Stop, type StopSignal } from '../../src/util/stop.ts';

test('listeners run once, in the order added, on the first abort; removed or late ones never', () => {
  const stop = new Stop();
  const calls: string[] = [];
  const a = () => calls.push('a');
  const b = () => calls.push('b');
  const c = () => calls.push('c');
  stop.addEventListener('abort', a);
  stop.addEventListener('abort', b);
  stop.addEventListener('abort', c);
  stop.removeEventListener('abort', b);
  stop.removeEventListener('abort', () => undefined);
  expect(stop.aborted).toBe(false);
  stop.abort();
  stop.abort();
  expect(stop.aborted).toBe(true);
  stop.addEventListener('abort', () => calls.push('late'));
  expect(calls).toEqual(['a', 'c']);
});

test('a listener that removes another during the abort does not stop it from running; nothing is held after', () => {
  const stop = new Stop();
  const calls: string[] = [];
  const second = () => calls.push('second');
  stop.addEventListener('abort', () => { calls.push('first'); stop.removeEventListener('abort', second); });
  stop.addEventListener('abort', second);
  stop.abort();
  expect(calls).toEqual(['first', 'second']);
});

test('an AbortSignal is a StopSignal: a wait written for one takes the other', () => {
  const waitFor = (signal: StopSignal) => new Promise<string>((resolve) => signal.addEventListener('abort', () => resolve('stopped'), { once: true }));
  const controller = new AbortController();
  const stop = new Stop();
  const both = Promise.all([waitFor(controller.signal), waitFor(stop)]);
  controller.abort();
  stop.abort();
  return expect(both).resolves.toEqual(['stopped', 'stopped']);
});

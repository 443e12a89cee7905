// Goal: the leaves that write Go's texts (durations, host:port splitting) and keep an output's tail give Go's and Consul's exact results.
import { expect, test } from 'vitest';
import { formatGoDuration, splitHostPort } from '../../src/probes/go-text.ts';
import { capturedText, TailBuffer } from '../../src/probes/tail-buffer.ts';

test('durations print as Go Duration.String', () => {
  expect([0, 0.5, 500, 1000, 1500, 30_000, 90_000, 3_600_000, 5_430_250].map(formatGoDuration)).toEqual([
    '0s', '500µs', '500ms', '1s', '1.5s', '30s', '1m30s', '1h0m0s', '1h30m30.25s',
  ]);
});

test('host:port splits like net.SplitHostPort', () => {
  expect(splitHostPort('127.0.0.1:80')).toEqual({ host: '127.0.0.1', port: 80 });
  expect(splitHostPort('[::1]:8500')).toEqual({ host: '::1', port: 8500 });
  expect(splitHostPort(':8500')).toEqual({ host: '', port: 8500 });
  expect(splitHostPort('[::1]')).toBe('address [::1]: missing port in address');
  expect(splitHostPort('example.test:http')).toBe('address example.test:http: invalid port');
});

test('the tail buffer keeps the last bytes over many chunks and counts them all', () => {
  const tail = new TailBuffer(5);
  for (const piece of ['ab', 'cd', 'ef', 'g', 'hij']) tail.push(Buffer.from(piece));
  expect([tail.text(), tail.totalBytes, tail.truncated]).toEqual(['fghij', 10, true]);
  expect(capturedText(tail)).toBe('Captured 5 of 10 bytes\n...\nfghij');
  const short = new TailBuffer(5);
  short.push(Buffer.from('abc'));
  expect(capturedText(short)).toBe('abc');
});

// Goal: the log tap behind the agent's logger: the output gets what the configured level lets through, each
// follower what it asked for; the logger runs at the lowest level wanted and returns to the configured one
// when followers leave or a reload changes it; a follower whose level leaves out the announcement still gets
// it first; a line logged while a follower is handed one reaches the output only; the ready line is written
// whatever the level but silent; the text form.
import { pino } from 'pino';
import { describe, expect, test } from 'vitest';
import { LogTap, logLineText } from '../../src/agent/log-tap.ts';

function tapped(level: string) {
  const out: string[] = [];
  const tap = new LogTap({ write: (line) => out.push(line) }, level);
  const logger = pino({ level, base: { node: 'n1' } }, tap);
  tap.attach(logger);
  return { out, tap, logger };
}

const announce = { msg: 'monitor started', fields: { reqId: 'r1' } };
const msgs = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { msg: string }).msg);

describe('LogTap', () => {
  test('the output keeps the configured level while a follower wants more; the logger level follows both', () => {
    const { out, tap, logger } = tapped('info');
    const got: string[] = [];
    const stop = tap.follow('debug', true, (l) => got.push(l), announce);
    expect(logger.level).toBe('debug');
    logger.debug('detail');
    logger.info('news');
    expect(msgs(out)).toEqual(['monitor started', 'news']);
    expect(msgs(got)).toEqual(['monitor started', 'detail', 'news']);
    stop();
    expect(logger.level).toBe('info');
    expect(tap.followed).toBe(0);
    logger.debug('unseen');
    expect(msgs(got)).toHaveLength(3);
  });

  test('a reload changes the configured level under the followers', () => {
    const { out, tap, logger } = tapped('info');
    const stop = tap.follow('debug', true, () => {}, announce);
    tap.setLevel('warn');
    expect(logger.level).toBe('debug');
    logger.info('quiet now');
    logger.warn('still said');
    expect(msgs(out)).toEqual(['monitor started', 'still said']);
    stop();
    expect(logger.level).toBe('warn');
    tap.setLevel('trace');
    expect(logger.level).toBe('trace');
  });

  test('a follower at error is handed its announcement, then only error lines', () => {
    const { out, tap, logger } = tapped('warn');
    const got: string[] = [];
    tap.follow('error', false, (l) => got.push(l), announce);
    expect(out).toEqual([]);
    logger.warn('below');
    logger.error({ err: new Error('disk gone') }, 'failed');
    expect(got).toHaveLength(2);
    expect(got[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[INFO\] {2}monitor started: reqId=r1\n$/);
    expect(got[1]).toMatch(/\[ERROR\] failed: err="disk gone"\n$/);
  });

  test('a line logged while a follower is handed one goes to the output only', () => {
    const { out, tap, logger } = tapped('info');
    const got: string[] = [];
    tap.follow('info', true, (l) => {
      got.push(l);
      logger.info('written by the socket code');
    }, announce);
    logger.info('first');
    expect(msgs(got)).toEqual(['monitor started', 'first']);
    expect(msgs(out)).toEqual(['monitor started', 'written by the socket code', 'first', 'written by the socket code']);
  });

  test('the ready line reaches the output at every configured level but silent', () => {
    const { out, tap, logger } = tapped('error');
    tap.always((l) => l.info('roster listening'));
    logger.info('not this one');
    expect(msgs(out)).toEqual(['roster listening']);
    expect(logger.level).toBe('error');
    const silent = tapped('silent');
    silent.tap.always((l) => l.info('roster listening'));
    expect(silent.out).toEqual([]);
  });

  test('the text form: time, padded level, message, fields (strings quoted only when they need it)', () => {
    const line = JSON.stringify({ level: 40, time: Date.UTC(2026, 10, 28, 9, 24, 22, 441), node: 'n1', msg: 'reload', setting: 'datacenter', why: 'two words', n: 3, list: ['a'] });
    expect(logLineText(line)).toBe('2026-11-28T09:24:22.441Z [WARN]  reload: setting=datacenter why="two words" n=3 list=["a"]\n');
    expect(logLineText('not json')).toBe('not json\n');
  });
});

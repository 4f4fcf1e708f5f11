import { jsonProblem, MAX_JSON_DEPTH } from '../../src/http/nul-bytes';

describe('jsonProblem (every JSON body before a route sees it)', () => {
  const nested = (n: number): unknown => JSON.parse('['.repeat(n) + ']'.repeat(n));

  test.each<[string, unknown, 'nul' | 'depth' | undefined]>([
    ['a plain body', { a: [1, 'two', { three: null }] }, undefined],
    ['a NUL in a string', { a: ['x\u0000'] }, 'nul'],
    ['a NUL in a key', { 'a\u0000': 1 }, 'nul'],
    [`${MAX_JSON_DEPTH} levels`, nested(MAX_JSON_DEPTH), undefined],
    [`${MAX_JSON_DEPTH + 1} levels`, nested(MAX_JSON_DEPTH + 1), 'depth'],
    ['10 000 levels (no stack overflow)', nested(10_000), 'depth'],
  ])('%s', (_what, value, expected) => {
    expect(jsonProblem(value)).toBe(expected);
  });
});

import { parsePermitRequest, permitStatusFor, rawNetworkOf, type PermitRequest } from '../../src/permit/schema';

/** The body table of the spec's "POST /v1/permit", as parsePermitRequest reads it. */
const OWNER = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';
const SPENDER = '0x1111111111111111111111111111111111111111';
const RECIPIENT = '0x2222222222222222222222222222222222222222';
const TOKEN = '0x3333333333333333333333333333333333333333';
const R = `0x${'ab'.repeat(32)}`;
const S = `0x${'1c'.repeat(32)}`;
const SIG = `0x${'ab'.repeat(32)}${'1c'.repeat(32)}1b`;

const body = (patch: Record<string, unknown> = {}) => ({
  network: 'base-sepolia',
  tokenAddress: TOKEN,
  owner: OWNER,
  spender: SPENDER,
  value: '1000000',
  deadline: '1700000000',
  v: 27,
  r: R,
  s: S,
  recipient: RECIPIENT,
  ...patch,
});
const without = (...keys: string[]) => {
  const b: Record<string, unknown> = body();
  for (const k of keys) delete b[k];
  return b;
};

function parsed(b: unknown): PermitRequest {
  const out = parsePermitRequest(b);
  if (!out.ok) throw new Error(`expected a valid body, got: ${out.message}`);
  return out.request;
}
function problem(b: unknown): string {
  const out = parsePermitRequest(b);
  if (out.ok) throw new Error(`expected an invalid body, got ${JSON.stringify(out.request)}`);
  return out.message;
}

describe('parsePermitRequest', () => {
  test('a complete v/r/s body parses; addresses keep their spelling', () => {
    expect(parsed(body())).toEqual({
      network: 'base-sepolia',
      tokenAddress: TOKEN,
      owner: OWNER,
      spender: SPENDER,
      value: '1000000',
      deadline: '1700000000',
      v: 27,
      r: R,
      s: S,
      recipient: RECIPIENT,
    });
  });

  test('numbers for value and deadline are coerced to decimal strings', () => {
    const p = parsed(body({ value: 1_000_000, deadline: 1_700_000_000 }));
    expect(p.value).toBe('1000000');
    expect(p.deadline).toBe('1700000000');
    expect(parsed(body({ value: 0 })).value).toBe('0');
  });

  test('decimal strings are normalised (leading zeros) and may exceed 2^53 up to uint256', () => {
    expect(parsed(body({ value: '000123' })).value).toBe('123');
    const max = ((1n << 256n) - 1n).toString();
    expect(parsed(body({ deadline: max })).deadline).toBe(max);
    expect(problem(body({ deadline: (1n << 256n).toString() }))).toContain('deadline: exceeds uint256');
  });

  test.each([
    ['a fraction', 1.5],
    ['a negative number', -1],
    ['an unsafe integer (precision already lost)', 2 ** 60],
    ['a decimal string with a point', '1.5'],
    ['hex', '0x10'],
    ['an exponent', '1e6'],
    ['an empty string', ''],
    ['a boolean', true],
  ])('value as %s -> invalid', (_, value) => {
    expect(problem(body({ value }))).toMatch(/^invalid request body: value: /);
  });

  test('r and s are accepted with or without 0x and normalised to 0x lower case', () => {
    const p = parsed(body({ r: R.slice(2).toUpperCase(), s: S.slice(2) }));
    expect(p.r).toBe(R);
    expect(p.s).toBe(S);
  });

  test.each([
    ['r too short', { r: '0x1234' }, 'r: must be 32-byte hex'],
    ['s not hex', { s: `0x${'zz'.repeat(32)}` }, 's: must be 32-byte hex'],
    ['v above 255', { v: 256 }, 'v: must be'],
    ['v negative', { v: -1 }, 'v: must be'],
    ['v a fraction', { v: 27.5 }, 'v: must be an integer'],
    ['v a string', { v: '27' }, 'v: must be an integer'],
  ])('%s -> invalid', (_, patch, message) => {
    expect(problem(body(patch))).toContain(message);
  });

  test('v 0 counts as missing', () => {
    const p = parsed(body({ v: 0 }));
    expect(p.v).toBeUndefined();
    expect(p.r).toBe(R); // a partial v/r/s is the signature resolver's business (invalid_signature)
    // v 0 and a signature: only the signature is given.
    expect(parsed(body({ v: 0, r: undefined, s: undefined, signature: SIG })).signature).toBe(SIG);
  });

  test('the 65-byte signature form parses', () => {
    const p = parsed(body({ v: undefined, r: undefined, s: undefined, signature: SIG.toUpperCase().replace('0X', '0x') }));
    expect(p.signature).toBe(SIG);
    expect([p.v, p.r, p.s]).toEqual([undefined, undefined, undefined]);
  });

  test.each([
    ['64 bytes', `0x${'ab'.repeat(64)}`, 'signature: must be 65 bytes'],
    ['66 bytes', `0x${'ab'.repeat(66)}`, 'signature: must be 65 bytes'],
    ['no 0x', 'ab'.repeat(65), 'signature: must match ^0x[a-fA-F0-9]+$'],
    ['odd length', `0x${'ab'.repeat(65)}1`, 'signature: must be 65 bytes'],
  ])('signature of %s -> invalid', (_, signature, message) => {
    expect(problem(body({ v: undefined, r: undefined, s: undefined, signature }))).toContain(message);
  });

  test('exactly one of (v, r, s) and signature', () => {
    expect(problem(body({ signature: SIG }))).toBe('invalid request body: signature: provide v, r, s or signature, not both');
    expect(problem(body({ v: undefined, r: undefined, signature: SIG }))).toContain('not both'); // s alone still counts
    expect(problem(without('v', 'r', 's'))).toBe('invalid request body: signature: a signature is required: v, r and s, or signature');
    expect(problem(body({ v: 0, r: undefined, s: undefined }))).toContain('a signature is required');
  });

  test('null and empty strings count as absent for the optional fields', () => {
    const p = parsed(body({ v: null, r: '', s: null, signature: SIG, tokenAddress: '' }));
    expect(p.signature).toBe(SIG);
    expect(p.tokenAddress).toBeUndefined();
  });

  test('tokenAddress may be omitted (the service answers permit_execution_failed) but not malformed', () => {
    expect(parsed(without('tokenAddress')).tokenAddress).toBeUndefined();
    expect(problem(body({ tokenAddress: '0x1234' }))).toContain('tokenAddress: must be a 0x-prefixed 20-byte hex address');
  });

  test('every required field is named when missing', () => {
    expect(problem({})).toBe(
      'invalid request body: network: is required; owner: is required; spender: is required; value: is required; deadline: is required; recipient: is required',
    );
  });

  test('malformed addresses and the zero recipient are invalid', () => {
    expect(problem(body({ owner: OWNER.slice(0, 41) }))).toContain('owner: must be a 0x-prefixed 20-byte hex address');
    expect(problem(body({ spender: 42 }))).toContain('spender: must be a 0x-prefixed 20-byte hex address');
    expect(problem(body({ recipient: `0x${'0'.repeat(40)}` }))).toContain('recipient: must not be the zero address');
  });

  test('unknown keys are ignored', () => {
    expect(parsed(body({ chainId: 84532, extra: { a: 1 } }))).toEqual(parsed(body()));
  });

  test('a body that is not an object is invalid', () => {
    for (const b of [null, [], 'x', 42]) expect(problem(b)).toBe('request body must be a JSON object');
  });
});

describe('rawNetworkOf and statuses', () => {
  test('echoes a string network, else the empty string', () => {
    expect(rawNetworkOf({ network: 'atlantis' })).toBe('atlantis');
    expect(rawNetworkOf({ network: 42 })).toBe('');
    expect(rawNetworkOf(undefined)).toBe('');
    expect(rawNetworkOf([])).toBe('');
  });

  test('each error reason has the spec status', () => {
    expect(
      Object.fromEntries(
        [
          'invalid_request',
          'unsupported_network',
          'network_not_configured',
          'invalid_signature',
          'permit_execution_failed',
          'permit_pending',
        ].map((r) => [r, permitStatusFor(r)]),
      ),
    ).toEqual({
      invalid_request: 400,
      unsupported_network: 400,
      network_not_configured: 400,
      invalid_signature: 400,
      permit_execution_failed: 500,
      permit_pending: 202,
    });
    expect(permitStatusFor('something_else')).toBe(500);
  });
});

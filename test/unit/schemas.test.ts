import { exactEvmPayloadSchema, paymentPayloadEnvelopeSchema, paymentRequirementsSchema } from '../../src/x402/schemas';

/** Field lists from the spec: "PaymentRequirements" and "PaymentPayload, EIP-3009 (standard)". */
const ADDR_A = '0x1111111111111111111111111111111111111111';
const ADDR_B = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const NONCE = `0x${'ab'.repeat(32)}`;
const SIG = `0x${'1c'.repeat(65)}`;

const requirements = () => ({
  scheme: 'exact',
  network: 'base-sepolia',
  maxAmountRequired: '1000000',
  resource: 'https://seller.example/weather',
  description: 'weather report',
  mimeType: 'application/json',
  payTo: ADDR_A,
  maxTimeoutSeconds: 300,
  asset: ADDR_B,
  extra: { name: 'USDC', version: '2' },
});

const authorization = () => ({
  from: ADDR_B,
  to: ADDR_A,
  value: '1000000',
  validAfter: '1700000000',
  validBefore: '1700000300',
  nonce: NONCE,
});

const exactPayload = () => ({
  x402Version: 1,
  scheme: 'exact',
  network: 'base-sepolia',
  payload: { signature: SIG, authorization: authorization() },
});

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, v: unknown) => schema.safeParse(v).success;

/** The issue paths of a failed parse, joined with '.', e.g. ['payload.authorization.nonce']. */
function failedPaths(schema: { safeParse(v: unknown): any }, v: unknown): string[] {
  const r = schema.safeParse(v);
  if (r.success) return [];
  return r.error.issues.map((i: { path: PropertyKey[] }) => i.path.map(String).join('.'));
}

const withReq = (patch: Record<string, unknown>) => ({ ...requirements(), ...patch });
const withoutReq = (key: string) => {
  const r: Record<string, unknown> = requirements();
  delete r[key];
  return r;
};
const withAuth = (patch: Record<string, unknown>) => {
  const p = exactPayload();
  return { ...p, payload: { ...p.payload, authorization: { ...p.payload.authorization, ...patch } } };
};
const withoutAuth = (key: string) => {
  const p = exactPayload();
  const a: Record<string, unknown> = { ...p.payload.authorization };
  delete a[key];
  return { ...p, payload: { ...p.payload, authorization: a } };
};

describe('paymentRequirementsSchema', () => {
  test('a spec sample passes and is returned unchanged', () => {
    const r = paymentRequirementsSchema.safeParse(requirements());
    expect(r.success).toBe(true);
    expect(r.data).toEqual(requirements());
  });

  test('scheme upto passes', () => {
    expect(ok(paymentRequirementsSchema, withReq({ scheme: 'upto' }))).toBe(true);
  });

  test('extra may be absent or null', () => {
    expect(ok(paymentRequirementsSchema, withoutReq('extra'))).toBe(true);
    expect(ok(paymentRequirementsSchema, withReq({ extra: null }))).toBe(true);
    expect(ok(paymentRequirementsSchema, withReq({ extra: undefined }))).toBe(true);
  });

  test('extra keeps the fields of the spec and unknown keys', () => {
    const extra = {
      name: 'GatewayWalletBatched',
      version: '1',
      creditedRecipient: ADDR_A,
      destinationChainId: 10,
      settleAmount: '5',
      platform: 'acme',
      platformFeeBps: 25,
      verifyingContract: ADDR_B,
      somethingElse: { x: 1 },
    };
    const r = paymentRequirementsSchema.safeParse(withReq({ extra }));
    expect(r.success).toBe(true);
    expect(r.data?.extra).toEqual(extra);
  });

  test('outputSchema is optional and anything', () => {
    expect(ok(paymentRequirementsSchema, withReq({ outputSchema: { input: { type: 'http' } } }))).toBe(true);
  });

  test.each(['scheme', 'network', 'maxAmountRequired', 'resource', 'description', 'mimeType', 'payTo', 'maxTimeoutSeconds', 'asset'])(
    'missing %s fails on that field',
    (key) => {
      expect(failedPaths(paymentRequirementsSchema, withoutReq(key))).toEqual([key]);
    },
  );

  test.each<[string, unknown]>([
    ['scheme', 'permit2'],
    ['scheme', 1],
    ['network', ''],
    ['network', 84532],
    ['network', 'n'.repeat(65)],
    ['maxAmountRequired', 1000000],
    ['maxAmountRequired', '1.5'],
    ['maxAmountRequired', '-1'],
    ['maxAmountRequired', '1e6'],
    ['maxAmountRequired', '0x10'],
    ['maxAmountRequired', ' 1'],
    ['maxAmountRequired', ''],
    ['maxAmountRequired', '1'.repeat(79)],
    ['resource', 42],
    ['resource', 'r'.repeat(2049)],
    ['description', null],
    ['mimeType', ['application/json']],
    ['payTo', '0x111111111111111111111111111111111111111'], // 19.5 bytes
    ['payTo', '0x11111111111111111111111111111111111111111'], // 21 nibbles too many
    ['payTo', '1111111111111111111111111111111111111111'], // no 0x
    ['payTo', '0xZZ11111111111111111111111111111111111111'],
    ['payTo', 12345],
    ['maxTimeoutSeconds', '300'],
    ['maxTimeoutSeconds', 0],
    ['maxTimeoutSeconds', -1],
    ['maxTimeoutSeconds', 1.5],
    ['maxTimeoutSeconds', 31_536_001],
    ['asset', 'usdc'],
    ['extra', 'USDC'],
    ['extra', { name: 1 }],
    ['extra', { version: 2 }],
    ['extra', { creditedRecipient: '0x12' }],
    ['extra', { destinationChainId: -1 }],
    ['extra', { destinationChainId: '10' }],
    ['extra', { settleAmount: '-5' }],
    ['extra', { verifyingContract: 'gateway' }],
  ])('%s = %j fails on that field', (key, value) => {
    const paths = failedPaths(paymentRequirementsSchema, withReq({ [key]: value }));
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(p.split('.')[0]).toBe(key);
  });

  test('uint strings: 0 and 78 digits pass, 79 digits fail', () => {
    expect(ok(paymentRequirementsSchema, withReq({ maxAmountRequired: '0' }))).toBe(true);
    const maxUint256 = (2n ** 256n - 1n).toString();
    expect(maxUint256).toHaveLength(78);
    expect(ok(paymentRequirementsSchema, withReq({ maxAmountRequired: maxUint256 }))).toBe(true);
    expect(ok(paymentRequirementsSchema, withReq({ maxAmountRequired: '9'.repeat(78) }))).toBe(true);
    expect(ok(paymentRequirementsSchema, withReq({ maxAmountRequired: '1' + '0'.repeat(78) }))).toBe(false);
  });

  test('addresses: lower-case, checksum and upper-case hex all pass the pattern', () => {
    expect(ok(paymentRequirementsSchema, withReq({ asset: ADDR_B.toLowerCase() }))).toBe(true);
    expect(ok(paymentRequirementsSchema, withReq({ asset: `0x${ADDR_B.slice(2).toUpperCase()}` }))).toBe(true);
  });

  test('not an object fails', () => {
    expect(ok(paymentRequirementsSchema, null)).toBe(false);
    expect(ok(paymentRequirementsSchema, 'x')).toBe(false);
    expect(ok(paymentRequirementsSchema, [requirements()])).toBe(false);
  });
});

describe('exactEvmPayloadSchema', () => {
  test('a spec sample passes and is returned unchanged', () => {
    const r = exactEvmPayloadSchema.safeParse(exactPayload());
    expect(r.success).toBe(true);
    expect(r.data).toEqual(exactPayload());
  });

  test.each(['x402Version', 'scheme', 'network', 'payload'])('missing top-level %s fails on it', (key) => {
    const p: Record<string, unknown> = exactPayload();
    delete p[key];
    expect(failedPaths(exactEvmPayloadSchema, p)).toEqual([key]);
  });

  test('missing signature or authorization fails on it', () => {
    const p = exactPayload();
    expect(failedPaths(exactEvmPayloadSchema, { ...p, payload: { authorization: p.payload.authorization } })).toEqual([
      'payload.signature',
    ]);
    expect(failedPaths(exactEvmPayloadSchema, { ...p, payload: { signature: SIG } })).toEqual(['payload.authorization']);
  });

  test.each(['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'])('missing authorization.%s fails on it', (key) => {
    expect(failedPaths(exactEvmPayloadSchema, withoutAuth(key))).toEqual([`payload.authorization.${key}`]);
  });

  test.each<[string, unknown]>([
    ['x402Version', 2],
    ['x402Version', '1'],
    ['x402Version', 0],
    ['scheme', 'upto'],
    ['scheme', 'EXACT'],
    ['network', ''],
    ['network', 8453],
  ])('top-level %s = %j fails on it', (key, value) => {
    expect(failedPaths(exactEvmPayloadSchema, { ...exactPayload(), [key]: value })).toEqual([key]);
  });

  test.each<[string, unknown]>([
    ['from', '0x12'],
    ['from', 'buyer.eth'],
    ['to', ADDR_A.slice(0, -1)],
    ['to', null],
    ['value', 1000000],
    ['value', '-1000000'],
    ['value', '1000000.0'],
    ['value', '0x0f4240'],
    ['value', '1'.repeat(79)],
    ['validAfter', 1700000000],
    ['validAfter', '-1'],
    ['validBefore', '17e8'],
    ['validBefore', '1'.repeat(79)],
    ['nonce', `0x${'ab'.repeat(31)}`], // 31 bytes
    ['nonce', `0x${'ab'.repeat(33)}`], // 33 bytes
    ['nonce', 'ab'.repeat(32)], // no 0x
    ['nonce', `0x${'zz'.repeat(32)}`],
    ['nonce', 1],
  ])('authorization.%s = %j fails on it', (key, value) => {
    expect(failedPaths(exactEvmPayloadSchema, withAuth({ [key]: value }))).toEqual([`payload.authorization.${key}`]);
  });

  test.each<[string, unknown]>([
    ['empty', '0x'],
    ['no 0x', '1c'.repeat(65)],
    ['odd length', `0x${'1'.repeat(129)}`],
    ['not hex', `0x${'gg'.repeat(65)}`],
    ['number', 1],
    ['over 1024 bytes', `0x${'aa'.repeat(1025)}`],
  ])('signature %s fails on it', (_label, signature) => {
    const p = exactPayload();
    expect(failedPaths(exactEvmPayloadSchema, { ...p, payload: { ...p.payload, signature } })).toEqual(['payload.signature']);
  });

  test('signature up to 1024 bytes passes (smart-wallet signatures are longer than 65 bytes)', () => {
    const p = exactPayload();
    expect(ok(exactEvmPayloadSchema, { ...p, payload: { ...p.payload, signature: `0x${'aa'.repeat(1024)}` } })).toBe(true);
  });

  test('uint boundaries: 0 and 78 digits pass', () => {
    expect(ok(exactEvmPayloadSchema, withAuth({ validAfter: '0' }))).toBe(true);
    expect(ok(exactEvmPayloadSchema, withAuth({ value: (2n ** 256n - 1n).toString() }))).toBe(true);
  });

  test('several bad fields are all reported', () => {
    expect(failedPaths(exactEvmPayloadSchema, withAuth({ from: 'x', nonce: '0x01', value: 'ten' })).sort()).toEqual([
      'payload.authorization.from',
      'payload.authorization.nonce',
      'payload.authorization.value',
    ]);
  });
});

describe('paymentPayloadEnvelopeSchema', () => {
  test('accepts exact and upto with any object payload', () => {
    expect(ok(paymentPayloadEnvelopeSchema, exactPayload())).toBe(true);
    const permit2 = {
      x402Version: 1,
      scheme: 'upto',
      network: 'bsc',
      payload: { signature: SIG, owner: ADDR_B, permit: { permitted: { token: ADDR_B, amount: '1' } }, witness: { to: ADDR_A } },
    };
    const r = paymentPayloadEnvelopeSchema.safeParse(permit2);
    expect(r.success).toBe(true);
    expect(r.data).toEqual(permit2);
    expect(ok(paymentPayloadEnvelopeSchema, { ...exactPayload(), payload: {} })).toBe(true);
  });

  test.each<[string, unknown]>([
    ['x402Version', 2],
    ['x402Version', '1'],
    ['scheme', 'permit2'],
    ['network', ''],
    ['network', 'n'.repeat(65)],
    ['payload', null],
    ['payload', 'signed'],
    ['payload', [1, 2]],
  ])('%s = %j fails on it', (key, value) => {
    expect(failedPaths(paymentPayloadEnvelopeSchema, { ...exactPayload(), [key]: value })).toEqual([key]);
  });

  test.each(['x402Version', 'scheme', 'network', 'payload'])('missing %s fails on it', (key) => {
    const p: Record<string, unknown> = exactPayload();
    delete p[key];
    expect(failedPaths(paymentPayloadEnvelopeSchema, p)).toEqual([key]);
  });
});

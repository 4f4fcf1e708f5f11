import { hexToBigInt, numberToHex, parseSignature, serializeSignature } from 'viem';
import type { Address, Hex, LocalAccount } from 'viem';
import { buildNetworkTable, type EvmNetwork } from '../../src/chains/networks';
import { verifyExactEvm, type ExactEvmChainReads } from '../../src/schemes/eip3009/verify';
import { readsUnlessSimulated } from '../../src/schemes/eip3009/reads';
import type { ExactEvmPayload, PaymentRequirements } from '../../src/x402/schemas';
import { exactPayment, type ExactPaymentOptions } from '../support/payments';
import { TEST_ACCOUNTS } from '../support/accounts';

/**
 * verifyExactEvm is pure given its chain reads, so an in-memory `reads` stands in for the chain
 * here (the integration tests run the same rules against anvil).
 */

const NOW = 1_700_000_000;
const MIN_VALIDITY = 6;
const VALUE = 1_000_000n;
const buyer = TEST_ACCOUNTS.buyers[0];
const stranger = TEST_ACCOUNTS.buyers[1];
const OTHER: Address = '0x000000000000000000000000000000000000dEaD';
const MAINNET_FACILITATOR: Address = '0x4444444444444444444444444444444444444444';

const table = buildNetworkTable({});
const baseSepolia = table.get('base-sepolia')!;

/** In-memory chain state: balances and used nonces keyed by lower-case (token, owner[, nonce]). */
function fakeReads(state: { balance?: bigint; usedNonces?: Hex[] } = {}) {
  const balances = new Map<string, bigint>();
  const used = new Set<string>();
  const key = (...parts: string[]) => parts.map((p) => p.toLowerCase()).join(':');
  const reads = {
    balances,
    used,
    setBalance: (token: Address, owner: Address, v: bigint) => balances.set(key(token, owner), v),
    markUsed: (token: Address, owner: Address, nonce: Hex) => used.add(key(token, owner, nonce)),
    balanceOf: jest.fn(async (token: Address, owner: Address) => balances.get(key(token, owner)) ?? 0n),
    authorizationState: jest.fn(async (token: Address, owner: Address, nonce: Hex) => used.has(key(token, owner, nonce))),
    // The payer is an EOA: the chain accepts no signature local recovery refused.
    verifyHash: jest.fn(async () => false),
    hasCode: jest.fn(async () => false),
  };
  if (state.balance !== undefined) reads.setBalance(baseSepolia.usdc!, buyer.address, state.balance);
  for (const n of state.usedNonces ?? []) reads.markUsed(baseSepolia.usdc!, buyer.address, n);
  return reads;
}
const notCalled = (reads: ReturnType<typeof fakeReads>) => {
  expect(reads.balanceOf).not.toHaveBeenCalled();
  expect(reads.authorizationState).not.toHaveBeenCalled();
};

async function pay(o: Partial<ExactPaymentOptions> = {}, network: EvmNetwork = baseSepolia) {
  const p = await exactPayment({
    buyer,
    network: network.id,
    chainId: network.chainId ?? 1,
    usdc: network.usdc ?? OTHER,
    facilitator: network.facilitator ?? MAINNET_FACILITATOR,
    value: VALUE,
    validAfter: BigInt(NOW - 600),
    validBefore: BigInt(NOW + 300),
    ...o,
  });
  return {
    payload: p.paymentPayload as ExactEvmPayload,
    req: p.paymentRequirements as PaymentRequirements,
  };
}

function verify(
  p: { payload: ExactEvmPayload; req: PaymentRequirements },
  reads: ExactEvmChainReads,
  o: { network?: EvmNetwork; now?: number; min?: number } = {},
) {
  return verifyExactEvm(p.payload, p.req, o.network ?? baseSepolia, {
    nowSeconds: o.now ?? NOW,
    minValiditySeconds: o.min ?? MIN_VALIDITY,
    reads,
  });
}
const invalid = (invalidReason: string) => ({ isValid: false, invalidReason, payer: buyer.address });

describe('verifyExactEvm: valid payment', () => {
  test('is valid with the payer, after reading balance and nonce state of the payer at the asset', async () => {
    const p = await pay();
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual({ isValid: true, payer: buyer.address });
    expect(reads.balanceOf).toHaveBeenCalledTimes(1);
    expect(reads.balanceOf).toHaveBeenCalledWith(p.req.asset, buyer.address);
    expect(reads.authorizationState).toHaveBeenCalledTimes(1);
    expect(reads.authorizationState).toHaveBeenCalledWith(p.req.asset, buyer.address, p.payload.payload.authorization.nonce);
  });

  test('network defaults come from buildNetworkTable({})', () => {
    expect(baseSepolia.enabled).toBe(true);
    expect(baseSepolia.chainId).toBe(84532);
    expect(baseSepolia.permit2Only).toBe(false);
  });

  test('addresses compare case-insensitively (lower-case payTo, asset, to, from)', async () => {
    const p = await pay({
      payTo: baseSepolia.facilitator!.toLowerCase() as Address,
      asset: baseSepolia.usdc!.toLowerCase() as Address,
      to: baseSepolia.facilitator!.toLowerCase() as Address,
    });
    const a = p.payload.payload.authorization;
    a.from = a.from.toLowerCase();
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual({ isValid: true, payer: a.from });
  });

  test('a read failure rejects (the activity retries it) instead of reporting an invalid payment', async () => {
    const p = await pay();
    const reads = fakeReads({ balance: VALUE });
    reads.balanceOf.mockRejectedValueOnce(new Error('rpc down'));
    await expect(verify(p, reads)).rejects.toThrow('rpc down');
  });
});

describe('verifyExactEvm: each rule', () => {
  test('invalid_network: disabled network (base without RPC or mainnet facilitator)', async () => {
    const base = table.get('base')!;
    expect(base.enabled).toBe(false);
    const p = await pay({}, base);
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads, { network: base })).resolves.toEqual(invalid('invalid_network'));
    notCalled(reads);
  });

  test('invalid_network: payload.network differs from requirements.network', async () => {
    const p = await pay();
    p.payload.network = 'optimism-sepolia';
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_network'));
    notCalled(reads);
  });

  test('invalid_network: both name another network than the entry passed in', async () => {
    const p = await pay();
    p.payload.network = 'optimism-sepolia';
    p.req.network = 'optimism-sepolia';
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(invalid('invalid_network'));
  });

  test('unsupported_scheme: permit2-only network (bsc enabled through env)', async () => {
    const bsc = buildNetworkTable({
      RPC_URLS_BSC: 'http://127.0.0.1:1',
      FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR,
      USDC_ADDRESS_BSC: '0x7777777777777777777777777777777777777777',
    }).get('bsc')!;
    expect(bsc.enabled).toBe(true);
    expect(bsc.permit2Only).toBe(true);
    const p = await pay({}, bsc);
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads, { network: bsc })).resolves.toEqual(invalid('unsupported_scheme'));
    notCalled(reads);
  });

  test('invalid_scheme: requirements scheme upto', async () => {
    const p = await pay();
    p.req.scheme = 'upto';
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_scheme'));
    notCalled(reads);
  });

  test('invalid_scheme: payload scheme upto', async () => {
    const p = await pay();
    (p.payload as { scheme: string }).scheme = 'upto';
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(invalid('invalid_scheme'));
  });

  test('recipient_mismatch: payTo is not the facilitator', async () => {
    const p = await pay({ payTo: OTHER });
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_recipient_mismatch'));
    notCalled(reads);
  });

  test('recipient_mismatch: authorization.to is not the facilitator (validly signed)', async () => {
    const p = await pay({ to: OTHER });
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_recipient_mismatch'));
    notCalled(reads);
  });

  test('asset_mismatch: asset is not the network USDC', async () => {
    const p = await pay({ asset: OTHER });
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_asset_mismatch'));
    notCalled(reads);
  });

  test('invalid_network: a network without a known USDC is not enabled (tempo), even with RPC and facilitator', async () => {
    const tempo = buildNetworkTable({
      RPC_URLS_TEMPO: 'http://127.0.0.1:1',
      FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR,
    }).get('tempo')!;
    expect(tempo.enabled).toBe(false);
    expect(tempo.usdc).toBeUndefined();
    const p = await pay({}, tempo);
    await expect(verify(p, fakeReads(), { network: tempo })).resolves.toEqual(invalid('invalid_network'));
  });

  test.each<[string, unknown]>([
    ['absent', undefined],
    ['null', null],
    ['without version', { name: 'USDC' }],
    ['without name', { version: '2' }],
    ['with empty name', { name: '', version: '2' }],
    ['with empty version', { name: 'USDC', version: '' }],
  ])('invalid_payment_requirements: extra %s', async (_label, extra) => {
    const p = await pay();
    if (extra === undefined) delete p.req.extra;
    else p.req.extra = extra as PaymentRequirements['extra'];
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_payment_requirements'));
    notCalled(reads);
  });

  test('signature: signed by another account', async () => {
    const p = await pay({ signer: stranger as LocalAccount });
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_signature'));
    notCalled(reads);
  });

  test.each<[string, string]>([
    ['too short', '0x1234'],
    ['65 zero bytes', `0x${'00'.repeat(65)}`],
    ['64 bytes of 0xff', `0x${'ff'.repeat(64)}`],
    ['66 bytes', `0x${'11'.repeat(66)}`],
  ])('signature: malformed bytes (%s)', async (_label, signature) => {
    const p = await pay();
    p.payload.payload.signature = signature;
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_signature'));
    notCalled(reads);
  });

  test('signature: requirements name a different domain version than was signed', async () => {
    const p = await pay(); // signed with { name: 'USDC', version: '2' }
    p.req.extra = { name: 'USDC', version: '1' };
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(invalid('invalid_exact_evm_payload_signature'));
  });

  test('signature: requirements name a different domain name than was signed', async () => {
    const p = await pay();
    p.req.extra = { name: 'USD Coin', version: '2' };
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(invalid('invalid_exact_evm_payload_signature'));
  });

  test('signature: signed for another chain id', async () => {
    const p = await pay({ chainId: 8453 });
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(invalid('invalid_exact_evm_payload_signature'));
  });

  test('signature: a signed field altered after signing', async () => {
    const p = await pay();
    p.payload.payload.authorization.validBefore = String(NOW + 301);
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(invalid('invalid_exact_evm_payload_signature'));
  });

  test('signature: authorization.from is not the signer', async () => {
    const p = await pay();
    p.payload.payload.authorization.from = stranger.address;
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_evm_payload_signature',
      payer: stranger.address,
    });
  });

  test('valid_after: one second in the future fails, exactly now passes', async () => {
    const future = await pay({ validAfter: BigInt(NOW + 1) });
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(future, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_authorization_valid_after'));
    notCalled(reads);
    const exactlyNow = await pay({ validAfter: BigInt(NOW) });
    await expect(verify(exactlyNow, fakeReads({ balance: VALUE }))).resolves.toEqual({ isValid: true, payer: buyer.address });
  });

  test('valid_before: exactly now + minValidity passes, one second less fails', async () => {
    const edge = await pay({ validBefore: BigInt(NOW + MIN_VALIDITY) });
    await expect(verify(edge, fakeReads({ balance: VALUE }))).resolves.toEqual({ isValid: true, payer: buyer.address });
    const short = await pay({ validBefore: BigInt(NOW + MIN_VALIDITY - 1) });
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(short, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_authorization_valid_before'));
    notCalled(reads);
  });

  test('valid_before: already expired', async () => {
    const p = await pay({ validBefore: BigInt(NOW - 1) });
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual(
      invalid('invalid_exact_evm_payload_authorization_valid_before'),
    );
  });

  test('valid_before: the window follows minValiditySeconds', async () => {
    const p = await pay({ validBefore: BigInt(NOW + 60) });
    await expect(verify(p, fakeReads({ balance: VALUE }), { min: 60 })).resolves.toEqual({ isValid: true, payer: buyer.address });
    await expect(verify(p, fakeReads({ balance: VALUE }), { min: 61 })).resolves.toEqual(
      invalid('invalid_exact_evm_payload_authorization_valid_before'),
    );
  });

  test.each<[string, bigint]>([
    ['below', VALUE + 1n],
    ['above', VALUE - 1n],
  ])('value: signed value %s maxAmountRequired', async (_label, maxAmountRequired) => {
    const p = await pay({ maxAmountRequired });
    const reads = fakeReads({ balance: 10n * VALUE });
    await expect(verify(p, reads)).resolves.toEqual(invalid('invalid_exact_evm_payload_authorization_value'));
    notCalled(reads);
  });

  test('insufficient_funds: balance = value - 1 fails, = value passes', async () => {
    const p = await pay();
    await expect(verify(p, fakeReads({ balance: VALUE - 1n }))).resolves.toEqual(invalid('insufficient_funds'));
    await expect(verify(p, fakeReads({ balance: VALUE }))).resolves.toEqual({ isValid: true, payer: buyer.address });
    await expect(verify(p, fakeReads())).resolves.toEqual(invalid('insufficient_funds'));
  });

  test('insufficient_funds: balances are read at the requirement asset for the payer', async () => {
    const p = await pay();
    const reads = fakeReads();
    reads.setBalance(baseSepolia.usdc!, stranger.address, 10n * VALUE); // someone else's money
    reads.setBalance(OTHER, buyer.address, 10n * VALUE); // another token
    await expect(verify(p, reads)).resolves.toEqual(invalid('insufficient_funds'));
  });

  test('nonce_used: the nonce of this payer at this token was used', async () => {
    const p = await pay();
    const nonce = p.payload.payload.authorization.nonce as Hex;
    await expect(verify(p, fakeReads({ balance: VALUE, usedNonces: [nonce] }))).resolves.toEqual(
      invalid('invalid_exact_evm_payload_authorization_nonce_used'),
    );
    // The same nonce used by another payer does not count.
    const reads = fakeReads({ balance: VALUE });
    reads.markUsed(baseSepolia.usdc!, stranger.address, nonce);
    await expect(verify(p, reads)).resolves.toEqual({ isValid: true, payer: buyer.address });
  });
});

/**
 * Every rule in its documented order, each broken by a change that leaves every other rule
 * satisfied. Breaking any two must report the earlier one.
 */
interface Setup {
  opts: Partial<ExactPaymentOptions>;
  network: EvmNetwork;
  balance: bigint;
  nonceUsed: boolean;
  after: Array<(p: { payload: ExactEvmPayload; req: PaymentRequirements }) => void>;
}
const RULES: Array<[string, (s: Setup) => void]> = [
  ['invalid_network', (s) => s.after.push((p) => void (p.payload.network = 'optimism-sepolia'))],
  ['unsupported_scheme', (s) => void (s.network = { ...s.network, permit2Only: true })],
  ['invalid_scheme', (s) => s.after.push((p) => void (p.req.scheme = 'upto'))],
  ['invalid_exact_evm_payload_recipient_mismatch', (s) => void (s.opts.payTo = OTHER)],
  ['invalid_exact_evm_payload_asset_mismatch', (s) => void (s.opts.asset = OTHER)],
  ['invalid_payment_requirements', (s) => void (s.opts.extra = { name: 'USDC' })],
  ['invalid_exact_evm_payload_signature', (s) => void (s.opts.signer = stranger as LocalAccount)],
  ['invalid_exact_evm_payload_authorization_valid_after', (s) => void (s.opts.validAfter = BigInt(NOW + 1))],
  ['invalid_exact_evm_payload_authorization_valid_before', (s) => void (s.opts.validBefore = BigInt(NOW + MIN_VALIDITY - 1))],
  ['invalid_exact_evm_payload_authorization_value', (s) => void (s.opts.maxAmountRequired = VALUE + 1n)],
  ['insufficient_funds', (s) => void (s.balance = VALUE - 1n)],
  ['invalid_exact_evm_payload_authorization_nonce_used', (s) => void (s.nonceUsed = true)],
];
const PURE = RULES.findIndex(([r]) => r === 'insufficient_funds');

async function runBroken(indices: number[]) {
  const s: Setup = { opts: {}, network: baseSepolia, balance: VALUE, nonceUsed: false, after: [] };
  for (const i of indices) RULES[i][1](s);
  const p = await pay(s.opts, baseSepolia);
  for (const f of s.after) f(p);
  const reads = fakeReads({ balance: s.balance });
  if (s.nonceUsed) reads.markUsed(baseSepolia.usdc!, buyer.address, p.payload.payload.authorization.nonce as Hex);
  const result = await verify(p, reads, { network: s.network });
  return { result, reads };
}

describe('verifyExactEvm: rule order', () => {
  test.each(RULES.map(([reason], i) => [reason, i] as const))('%s alone', async (reason, i) => {
    const { result, reads } = await runBroken([i]);
    expect(result).toEqual(invalid(reason));
    if (i < PURE) notCalled(reads);
  });

  const pairs: Array<[string, string, number, number]> = [];
  for (let i = 0; i < RULES.length; i++) {
    for (let j = i + 1; j < RULES.length; j++) pairs.push([RULES[i][0], RULES[j][0], i, j]);
  }
  test.each(pairs)('%s wins over %s', async (reason, _later, i, j) => {
    const { result, reads } = await runBroken([i, j]);
    expect(result).toEqual(invalid(reason));
    if (i < PURE) notCalled(reads);
  });

  test('every rule broken at once reports invalid_network without any read', async () => {
    const { result, reads } = await runBroken(RULES.map((_, i) => i));
    expect(result).toEqual(invalid('invalid_network'));
    notCalled(reads);
  });

  test('named examples from the brief', async () => {
    const recipientAndSig = await runBroken([3, 6]);
    expect(recipientAndSig.result).toEqual(invalid('invalid_exact_evm_payload_recipient_mismatch'));
    const expiredAndBroke = await runBroken([8, 10]);
    expect(expiredAndBroke.result).toEqual(invalid('invalid_exact_evm_payload_authorization_valid_before'));
    notCalled(expiredAndBroke.reads);
  });
});

describe('verifyExactEvm: signature and address spellings the token would treat differently', () => {
  test('the high-s twin of a valid signature is rejected (the token would revert on it)', async () => {
    const p = await pay();
    const sig = parseSignature(p.payload.payload.signature as Hex);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const twin = serializeSignature({ r: sig.r, s: numberToHex(n - hexToBigInt(sig.s), { size: 32 }), yParity: sig.yParity === 0 ? 1 : 0 });
    p.payload.payload.signature = twin;
    const reads = fakeReads({ balance: VALUE });
    expect(await verify(p, reads)).toEqual(invalid('invalid_exact_evm_payload_signature'));
  });

  test('upper-case hex addresses of a validly signed payment are accepted', async () => {
    const p = await pay();
    const upper = (a: string) => `0x${a.slice(2).toUpperCase()}`;
    p.payload.payload.authorization.from = upper(p.payload.payload.authorization.from);
    p.req.asset = upper(p.req.asset);
    const reads = fakeReads({ balance: VALUE });
    expect(await verify(p, reads)).toEqual({ isValid: true, payer: p.payload.payload.authorization.from });
  });
});

describe('verifyExactEvm after the settling call was simulated (the worker: one simulation per payment)', () => {
  test('a successful simulation answers balance and nonce: valid with no read', async () => {
    const p = await pay();
    const reads = fakeReads({ balance: 0n }); // the reads would say insufficient_funds
    expect(await verify(p, readsUnlessSimulated(Promise.resolve(true), reads))).toEqual({ isValid: true, payer: buyer.address });
    notCalled(reads);
  });

  test('a failed simulation reads the chain to name the reason', async () => {
    const p = await pay();
    const poor = fakeReads({ balance: VALUE - 1n });
    expect(await verify(p, readsUnlessSimulated(Promise.resolve(false), poor))).toEqual(invalid('insufficient_funds'));
    const used = fakeReads({ balance: VALUE, usedNonces: [p.payload.payload.authorization.nonce as Hex] });
    expect(await verify(p, readsUnlessSimulated(Promise.resolve(false), used))).toEqual(
      invalid('invalid_exact_evm_payload_authorization_nonce_used'),
    );
    expect(used.authorizationState).toHaveBeenCalledTimes(1);
  });

  test('a simulation without an answer fails verification as a failed read does (retried), with no read made', async () => {
    const p = await pay();
    const reads = fakeReads({ balance: VALUE });
    await expect(verify(p, readsUnlessSimulated(Promise.reject(new Error('HTTP request failed')), reads))).rejects.toThrow(
      'HTTP request failed',
    );
    notCalled(reads);
  });

  test('the rules the chain does not check still apply after a successful simulation', async () => {
    // The token accepts any validBefore in the future; we want MIN_VALIDITY seconds left.
    const p = await pay({ validBefore: BigInt(NOW + MIN_VALIDITY - 1) });
    const reads = fakeReads({ balance: VALUE });
    expect(await verify(p, readsUnlessSimulated(Promise.resolve(true), reads))).toEqual(
      invalid('invalid_exact_evm_payload_authorization_valid_before'),
    );
    notCalled(reads);
  });
});

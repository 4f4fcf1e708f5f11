import { buildNetworkTable } from '../../src/chains/networks';
import { routeOf } from '../../src/settle/routes';

const networks = buildNetworkTable({});
const settleRouteOf = (body: unknown) => routeOf(networks, body)?.route;

const SIG = `0x${'1c'.repeat(65)}`;
const ADDR = '0x1111111111111111111111111111111111111111';
const eip3009 = {
  signature: SIG,
  authorization: { from: ADDR, to: ADDR, value: '1', validAfter: '0', validBefore: '9', nonce: `0x${'ab'.repeat(32)}` },
};
const permit2 = {
  signature: SIG,
  owner: ADDR,
  permit: { permitted: { token: ADDR, amount: '1' }, nonce: '1', deadline: '9' },
  witness: { to: ADDR, validAfter: '0' },
};
const BATCHED = { name: 'GatewayWalletBatched', version: '1' };
const route = (network: string, payload: Record<string, unknown>, extra?: Record<string, unknown> | null) =>
  settleRouteOf({
    paymentPayload: { x402Version: 1, scheme: 'exact', network, payload },
    paymentRequirements: {
      scheme: 'exact',
      network,
      maxAmountRequired: '1',
      resource: 'https://example.com/r',
      description: '',
      mimeType: 'application/json',
      payTo: ADDR,
      maxTimeoutSeconds: 60,
      asset: ADDR,
      extra,
    },
  });

describe('the scheme registry, in the spec routing order', () => {
  test('step 1: solana and solana-devnet are solana', () => {
    expect(route('solana', { transaction: 'AQID' })).toBe('solana');
    expect(route('solana-devnet', { transaction: 'AQID' })).toBe('solana');
  });

  test('step 1 wins even with the batched marker', () => {
    expect(route('solana', { transaction: 'AQID' }, BATCHED)).toBe('solana');
    expect(route('solana-devnet', eip3009, BATCHED)).toBe('solana');
  });

  test('step 1 wins over a Permit2-shaped payload', () => {
    expect(route('solana', permit2)).toBe('solana');
    expect(route('solana-devnet', permit2, BATCHED)).toBe('solana');
  });

  test('solana-like ids that are not solana ids do not take step 1', () => {
    expect(route('Solana', eip3009)).toBe('eip3009');
    expect(route('solana-mainnet', eip3009)).toBe('eip3009');
  });

  test('step 2: the batched marker needs name GatewayWalletBatched and version "1"', () => {
    expect(route('base-sepolia', eip3009, BATCHED)).toBe('batched');
    expect(route('base', eip3009, { ...BATCHED, verifyingContract: ADDR })).toBe('batched');
    expect(route('base-sepolia', eip3009, { name: 'GatewayWalletBatched' })).toBe('eip3009');
    expect(route('base-sepolia', eip3009, { name: 'GatewayWalletBatched', version: '2' })).toBe('eip3009');
    // A numeric version does not parse as requirements at all: no route, the EIP-3009 checks answer it.
    expect(route('base-sepolia', eip3009, { name: 'GatewayWalletBatched', version: 1 })).toBeUndefined();
    expect(route('base-sepolia', eip3009, { name: 'USDC', version: '1' })).toBe('eip3009');
    expect(route('base-sepolia', eip3009, { name: 'gatewaywalletbatched', version: '1' })).toBe('eip3009');
    expect(route('base-sepolia', eip3009, { version: '1' })).toBe('eip3009');
  });

  test('step 2 wins over a Permit2-shaped payload', () => {
    expect(route('bsc', permit2, BATCHED)).toBe('batched');
  });

  test('step 3: a payload with permit, witness and owner is permit2', () => {
    expect(route('bsc', permit2)).toBe('permit2');
    expect(route('base-sepolia', permit2, { name: 'USDC', version: '2' })).toBe('permit2');
    expect(route('megaeth', permit2, null)).toBe('permit2');
  });

  test('step 3 needs all three of permit, witness and owner', () => {
    const { permit, witness, owner, signature } = permit2;
    expect(route('bsc', { signature, witness, owner })).toBe('eip3009');
    expect(route('bsc', { signature, permit, owner })).toBe('eip3009');
    expect(route('bsc', { signature, permit, witness })).toBe('eip3009');
  });

  test('step 3 needs the payload to parse as Permit2, not just to have its keys', () => {
    expect(route('bsc', { ...permit2, owner: 'not-an-address' })).toBe('eip3009');
    expect(route('bsc', { ...permit2, permit: { ...permit2.permit, nonce: '0x01' } })).toBe('eip3009');
    expect(route('bsc', { ...permit2, witness: { to: ADDR } })).toBe('eip3009');
    const upto = { ...permit2, witness: { ...permit2.witness, facilitator: ADDR } };
    expect(route('base', upto)).toBe('permit2');
    const with2612 = { ...permit2, permit2612: { value: '1', deadline: '9', r: `0x${'11'.repeat(32)}`, s: `0x${'22'.repeat(32)}`, v: 27 } };
    expect(route('base', with2612)).toBe('permit2');
  });

  test('a payload that is both EIP-3009 and Permit2 shaped is permit2 (step 3 before step 4)', () => {
    expect(route('base-sepolia', { ...eip3009, ...permit2 })).toBe('permit2');
  });

  test('step 4: everything else is eip3009', () => {
    expect(route('base-sepolia', eip3009)).toBe('eip3009');
    expect(route('base-sepolia', eip3009, null)).toBe('eip3009');
    expect(route('base-sepolia', {})).toBe('eip3009');
  });

  test('step 4 with a destination chain that differs from the source is bridged', () => {
    expect(route('base-sepolia', eip3009, { name: 'USDC', version: '2', destinationChainId: 10 })).toBe('eip3009-crosschain');
    expect(route('base-sepolia', eip3009, { name: 'USDC', version: '2', destinationChainId: 84532 })).toBe('eip3009');
    expect(route('no-such-network', eip3009, { name: 'USDC', version: '2', destinationChainId: 10 })).toBe('eip3009');
  });
});

describe('routeOf (the raw request body)', () => {
  const requirements = (extra?: Record<string, unknown>) => ({
    scheme: 'exact',
    network: 'base-sepolia',
    maxAmountRequired: '1',
    resource: 'https://example.com/r',
    description: '',
    mimeType: 'application/json',
    payTo: ADDR,
    maxTimeoutSeconds: 60,
    asset: ADDR,
    ...(extra ? { extra } : {}),
  });
  const body = (network: string, payload: unknown, reqs: unknown = requirements()) => ({
    paymentPayload: { x402Version: 1, scheme: 'exact', network, payload },
    paymentRequirements: reqs,
  });

  test('Solana is decided by the payload network alone, even with base58 requirements the EVM schema refuses', () => {
    const solanaReqs = {
      ...requirements(),
      network: 'solana-devnet',
      payTo: 'So11111111111111111111111111111111111111112',
      asset: 'So11111111111111111111111111111111111111112',
    };
    expect(settleRouteOf(body('solana-devnet', { transaction: 'AQ==' }, solanaReqs))).toBe('solana');
  });

  test('each EVM step from a full body', () => {
    expect(settleRouteOf(body('base-sepolia', eip3009, requirements(BATCHED)))).toBe('batched');
    expect(settleRouteOf(body('base-sepolia', permit2))).toBe('permit2');
    expect(settleRouteOf(body('base-sepolia', eip3009))).toBe('eip3009');
    expect(settleRouteOf(body('base-sepolia', { ...eip3009, ...permit2 }, requirements(BATCHED)))).toBe('batched');
  });

  test('no route when the envelope or the EVM requirements do not parse (the EIP-3009 checks answer them)', () => {
    expect(settleRouteOf(undefined)).toBeUndefined();
    expect(settleRouteOf('x')).toBeUndefined();
    expect(settleRouteOf({ paymentPayload: { network: 'base-sepolia' }, paymentRequirements: requirements() })).toBeUndefined();
    expect(settleRouteOf(body('base-sepolia', eip3009, { ...requirements(), payTo: 'nope' }))).toBeUndefined();
  });
});

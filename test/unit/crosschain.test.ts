import { buildNetworkTable } from '../../src/chains/networks';
import {
  bpsOf,
  bridgeFeeFor,
  decodeBurnMessage,
  destinationSplit,
  encodeBurnMessage,
  fastFeeOf,
  fastMaxFee,
  isAttestationForm,
  isAttestedFormOf,
  type BurnMessage,
} from '../../src/chains/evm/bridge';
import { crossChainRouteOf } from '../../src/schemes/eip3009-crosschain/route';

const message: BurnMessage = {
  version: 1,
  sourceDomain: 6,
  destinationDomain: 2,
  nonce: `0x${'00'.repeat(32)}`,
  sender: '0xf55746fa9288ae0b7393e645bfcf222d62eaf47b',
  recipient: '0xf55746fa9288ae0b7393e645bfcf222d62eaf47b',
  destinationCaller: '0x0000000000000000000000000000000000000003',
  minFinalityThreshold: 2000,
  finalityThresholdExecuted: 0,
  body: {
    version: 1,
    burnToken: '0x0000000000000000000000000000000000000001',
    mintRecipient: '0x0000000000000000000000000000000000000002',
    amount: 2_000_000n,
    messageSender: '0x0000000000000000000000000000000000000004',
    maxFee: 20_000n,
    feeExecuted: 0n,
    expirationBlock: 0n,
    hookData: '0x',
  },
};
/** What the attestation service returns for it: nonce, executed finality and fee filled in. */
const attested: BurnMessage = {
  ...message,
  nonce: `0x${'ab'.repeat(32)}`,
  finalityThresholdExecuted: 2000,
  body: { ...message.body, feeExecuted: 2_000n },
};

describe('CCTP V2 burn message', () => {
  test('packs a 148-byte header and a 228-byte body, and decodes back', () => {
    const hex = encodeBurnMessage(message);
    expect(hex.length).toBe(2 + (148 + 228) * 2);
    expect(hex.slice(2, 26)).toBe('00000001' + '00000006' + '00000002'); // version, source and destination domains
    expect(hex.slice(2 + 140 * 2, 2 + 148 * 2)).toBe('000007d0' + '00000000'); // minFinalityThreshold 2000, executed 0
    expect(decodeBurnMessage(hex)).toEqual(message);
    const withHook = { ...message, body: { ...message.body, hookData: '0xdeadbeef' as const } };
    expect(decodeBurnMessage(encodeBurnMessage(withHook))).toEqual(withHook);
  });

  test('anything shorter than a header and a burn body is refused', () => {
    expect(() => decodeBurnMessage(encodeBurnMessage(message).slice(0, -2) as `0x${string}`)).toThrow('too short');
    expect(() => decodeBurnMessage('0x')).toThrow('too short');
  });

  test('an attested message is ours when only the fields the service fills in differ', () => {
    expect(isAttestedFormOf(encodeBurnMessage(message), encodeBurnMessage(attested))).toBe(true);
    // No nonce yet: not an attested form.
    expect(isAttestedFormOf(encodeBurnMessage(message), encodeBurnMessage(message))).toBe(false);
    const other = { ...attested, body: { ...attested.body, amount: 1n } };
    expect(isAttestedFormOf(encodeBurnMessage(message), encodeBurnMessage(other))).toBe(false);
    const elsewhere = { ...attested, body: { ...attested.body, mintRecipient: '0x0000000000000000000000000000000000000009' as const } };
    expect(isAttestedFormOf(encodeBurnMessage(message), encodeBurnMessage(elsewhere))).toBe(false);
    expect(isAttestedFormOf(encodeBurnMessage(message), '0x1234')).toBe(false);
  });
});

describe('fee arithmetic (exact input)', () => {
  test('basis points round down', () => {
    expect(bpsOf(2_000_000n, 10)).toBe(2_000n);
    expect(bpsOf(999n, 10)).toBe(0n);
    expect(bpsOf(1_000_000n, 10_000)).toBe(1_000_000n);
  });

  test('the bridge fee is the rate capped at maxFee', () => {
    expect(bridgeFeeFor(2_000_000n, 20_000n, 10)).toBe(2_000n);
    expect(bridgeFeeFor(2_000_000n, 500n, 10)).toBe(500n);
    expect(bridgeFeeFor(2_000_000n, 0n, 10)).toBe(0n);
  });

  test("a fast burn's maxFee is Circle's client's: the fee rounded up, plus 10%", () => {
    expect(fastMaxFee(2_000_000n, 1_000n)).toBe(2_200n); // 10 bps of 2 USDC (the client's getMaxFee gives 2,200 in settle-crosschain.test.ts)
    expect(fastMaxFee(1_000_000n, 130n)).toBe(143n); // 1.3 bps of 1 USDC: 130 + 13
    expect(fastMaxFee(1_001n, 130n)).toBe(1n); // 0.013 rounds up to 1; the buffer of 1 rounds down to 0
    expect(fastMaxFee(2_000_000n, 0n)).toBe(0n);
  });

  test("the fees endpoint's fast tier in hundredths of a bp; no fast tier; anything else is no answer", () => {
    const standard = { finalityThreshold: 2000, minimumFee: 0 };
    expect(fastFeeOf([{ finalityThreshold: 1000, minimumFee: 10 }, standard])).toBe(1_000n);
    expect(fastFeeOf([{ finalityThreshold: 1000, minimumFee: '1.3' }, standard])).toBe(130n);
    expect(fastFeeOf([standard])).toBe('none');
    expect(fastFeeOf([])).toBe('none');
    for (const body of [
      undefined,
      null,
      {},
      'x',
      [{ finalityThreshold: 1000 }],
      [{ finalityThreshold: 1000, minimumFee: '-1' }],
      [{ finalityThreshold: '1000', minimumFee: 1 }],
      [{ finalityThreshold: 1000, minimumFee: -1 }],
    ])
      expect(fastFeeOf(body)).toBeUndefined();
  });

  test('the payout is what arrives minus the platform fee, the fee capped at what arrives', () => {
    expect(destinationSplit(2_000_000n, 2_000n, 20_000n)).toEqual({ received: 1_998_000n, fee: 20_000n, payout: 1_978_000n });
    expect(destinationSplit(100n, 10n, 500n)).toEqual({ received: 90n, fee: 90n, payout: 0n });
  });
});

describe('crossChainRouteOf', () => {
  const networks = buildNetworkTable({
    RPC_URLS_ARC_TESTNET: 'http://127.0.0.1:1',
    USDC_ADDRESS_ARC_TESTNET: '0x0000000000000000000000000000000000000005',
  });
  const net = (id: Parameters<typeof networks.get>[0]) => networks.get(id)!;
  const route = (src: Parameters<typeof networks.get>[0], dest: number | undefined, mainnetsEnabled = false) =>
    crossChainRouteOf(net(src), dest, networks, { mainnetsEnabled });

  test('absent or equal destination stays on the source chain', () => {
    expect(route('base-sepolia', undefined)).toEqual({ kind: 'same-chain' });
    expect(route('base-sepolia', 84532)).toEqual({ kind: 'same-chain' });
  });

  test('another bridgeable chain of the same mode is cross-chain, with both CCTP domains', () => {
    const r = route('base-sepolia', 11155420);
    expect(r.kind).toBe('cross-chain');
    if (r.kind !== 'cross-chain') return;
    expect(r.destination.id).toBe('optimism-sepolia');
    expect(r.sourceDomain).toBe(6);
    expect(r.destination.cctpDomain).toBe(2);
  });

  test('same-chain-only networks refuse either end', () => {
    expect(route('arc-testnet', 84532)).toEqual({ kind: 'reject', reason: 'cross_chain_not_supported' });
    expect(route('base-sepolia', 5042002)).toEqual({ kind: 'reject', reason: 'cross_chain_not_supported' });
    expect(crossChainRouteOf(net('base-sepolia'), 43114, buildNetworkTable({}), { mainnetsEnabled: true })).toEqual({
      kind: 'reject',
      reason: 'cross_chain_not_supported',
    });
  });

  test('unknown, disabled or other-mode destinations are unsupported', () => {
    expect(route('base-sepolia', 999_999)).toEqual({ kind: 'reject', reason: 'unsupported_destination_chain' });
    expect(route('base-sepolia', 8453)).toEqual({ kind: 'reject', reason: 'unsupported_destination_chain' }); // base: no RPC, mainnet
  });
});

describe('attestation form (CCTP V2: 65 bytes per required signature)', () => {
  const sig = (b: string) => b.repeat(65);
  test('one or more whole 65-byte signatures are an attestation', () => {
    expect(isAttestationForm(`0x${sig('ab')}`)).toBe(true);
    expect(isAttestationForm(`0x${sig('ab')}${sig('CD')}`)).toBe(true);
    expect(isAttestationForm(`0x${sig('ab')}${sig('cd')}${sig('ef')}`)).toBe(true);
  });
  test('anything else is not: pending, empty, a partial signature, not hex', () => {
    for (const v of ['PENDING', '0x', '', sig('ab'), `0x${sig('ab')}00`, `0x${sig('ab').slice(2)}`, `0x${sig('ab')}${sig('zz')}`]) {
      expect(isAttestationForm(v)).toBe(false);
    }
  });
});

import { concat, hashDomain, hexToBigInt, numberToHex, parseSignature, serializeSignature, toHex, type Address, type Hex } from 'viem';
import { buildNetworkTable } from '../../src/chains/networks';
import { uptoSettleAmount, verifyPermit2, type Permit2ChainReads } from '../../src/schemes/permit2/verify';
import { permit2PaymentPayloadSchema, type Permit2PaymentPayload } from '../../src/schemes/permit2/payload';
import { paymentRequirementsSchema, type PaymentRequirements } from '../../src/x402/schemas';
import { settleStatusFor } from '../../src/schemes/reasons';
import { permitDigest } from '../../src/permit/signature';
import { TEST_ACCOUNTS } from '../support/accounts';
import { permit2612For, permit2Payment, type Permit2PaymentOptions } from '../support/permit2-payments';

/**
 * verifyPermit2 is pure given its chain reads: an in-memory chain stands in here (the integration
 * test runs the same rules against anvil). Payloads are signed with viem as buyers sign them.
 */
const NOW = 1_700_000_000;
const MIN_VALIDITY = 6;
const buyer = TEST_ACCOUNTS.buyers[0];
const stranger = TEST_ACCOUNTS.buyers[1];
const OTHER: Address = '0x000000000000000000000000000000000000dEaD';
const network = buildNetworkTable({}).get('base-sepolia')!;
const usdc = network.usdc!;
const USDC_DOMAIN = hashDomain({
  domain: { name: 'USDC', version: '2', chainId: BigInt(network.chainId!), verifyingContract: usdc },
  types: {
    EIP712Domain: [
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
    ],
  },
});

interface ChainState {
  balance?: bigint;
  allowance?: bigint;
  bitmap?: bigint;
  tokenNonce?: bigint;
  noEip2612?: boolean;
}
function fakeReads(s: ChainState = {}) {
  return {
    balanceOf: jest.fn(async () => s.balance ?? 10_000_000n),
    allowance: jest.fn(async (_t: Address, _o: Address, spender: Address) =>
      spender === network.permit2 ? (s.allowance ?? 2n ** 255n) : 0n,
    ),
    nonceBitmap: jest.fn(async () => s.bitmap ?? 0n),
    eip2612: jest.fn(async () => (s.noEip2612 ? undefined : { domainSeparator: USDC_DOMAIN, nonce: s.tokenNonce ?? 0n })),
    // The owner is an EOA: the chain accepts no signature local recovery refused.
    verifyHash: jest.fn(async (): Promise<boolean> => false),
    hasCode: jest.fn(async () => false),
  } satisfies Permit2ChainReads;
}

async function pay(o: Partial<Permit2PaymentOptions> = {}) {
  const body = await permit2Payment({
    scheme: 'exact',
    buyer,
    network: 'base-sepolia',
    chainId: network.chainId!,
    usdc,
    facilitator: network.facilitator!,
    permit2: network.permit2,
    exactProxy: network.exactPermit2Proxy,
    uptoProxy: network.uptoPermit2Proxy,
    amount: 1_000_000n,
    nonce: 77n,
    deadline: BigInt(NOW + 300),
    validAfter: BigInt(NOW - 600),
    ...o,
  });
  return {
    payload: permit2PaymentPayloadSchema.parse(body.paymentPayload) as Permit2PaymentPayload,
    req: paymentRequirementsSchema.parse(body.paymentRequirements) as PaymentRequirements,
  };
}

const verify = (p: { payload: Permit2PaymentPayload; req: PaymentRequirements }, reads = fakeReads()) =>
  verifyPermit2(p.payload, p.req, network, { nowSeconds: NOW, minValiditySeconds: MIN_VALIDITY, reads });

const reasonOf = async (p: Promise<{ payload: Permit2PaymentPayload; req: PaymentRequirements }>, reads = fakeReads()) => {
  const v = await verify(await p, reads);
  return v.isValid ? 'valid' : v.invalidReason;
};

describe('verifyPermit2: valid payments', () => {
  test('exact: the signed amount, the exact proxy as spender', async () => {
    expect(await verify(await pay())).toEqual({
      isValid: true,
      payer: buyer.address,
      scheme: 'exact',
      amount: '1000000',
      spender: network.exactPermit2Proxy,
      applyPermit2612: false,
    });
  });

  test('upto: settleAmount, else the full maximum; the upto proxy as spender', async () => {
    expect(await verify(await pay({ scheme: 'upto', amount: 5_000_000n, settleAmount: 1n }))).toMatchObject({
      isValid: true,
      amount: '1',
      spender: network.uptoPermit2Proxy,
    });
    expect(await verify(await pay({ scheme: 'upto', amount: 5_000_000n, settleAmount: 5_000_000n }))).toMatchObject({
      isValid: true,
      amount: '5000000',
    });
    expect(await verify(await pay({ scheme: 'upto', amount: 5_000_000n }))).toMatchObject({ isValid: true, amount: '5000000' });
  });

  test('addresses in any case; deadline exactly MIN_VALIDITY_SECONDS away and validAfter == now are fine', async () => {
    const p = await pay({ deadline: BigInt(NOW + MIN_VALIDITY), validAfter: BigInt(NOW) });
    p.req.payTo = p.req.payTo.toLowerCase();
    p.req.asset = p.req.asset.toUpperCase().replace('0X', '0x');
    p.payload.payload.witness.to = p.payload.payload.witness.to.toLowerCase();
    p.payload.payload.owner = p.payload.payload.owner.toLowerCase();
    expect((await verify(p)).isValid).toBe(true);
  });

  test('other bits of the nonce word set: still valid', async () => {
    expect(await reasonOf(pay({ nonce: 77n }), fakeReads({ bitmap: ~(1n << 77n) & (2n ** 256n - 1n) }))).toBe('valid');
  });

  test('missing allowance with a valid permit2612 (v as 27/28 or 0/1): valid, to be applied', async () => {
    const permit = await permit2612For(buyer, {
      chainId: network.chainId!,
      usdc,
      permit2: network.permit2,
      value: 1_000_000n,
      nonce: 3n,
      deadline: BigInt(NOW + 300),
    });
    const v = await verify(await pay({ permit2612: permit }), fakeReads({ allowance: 0n, tokenNonce: 3n }));
    expect(v).toMatchObject({ isValid: true, applyPermit2612: true });
    const zeroOne = await verify(await pay({ permit2612: { ...permit, v: permit.v - 27 } }), fakeReads({ allowance: 0n, tokenNonce: 3n }));
    expect(zeroOne).toMatchObject({ isValid: true, applyPermit2612: true });
  });

  test("a smart wallet's permit2612: the 65 bytes r‖s‖v the token's v/r/s permit packs are asked of the wallet (EIP-1271)", async () => {
    // Signed by the wallet's owner key, not the wallet's address: local recovery does not confirm it.
    const permit = await permit2612For(buyer, {
      chainId: network.chainId!,
      usdc,
      permit2: network.permit2,
      value: 1_000_000n,
      nonce: 3n,
      deadline: BigInt(NOW + 300),
      signer: stranger,
    });
    const digest = permitDigest(USDC_DOMAIN, {
      owner: buyer.address,
      spender: network.permit2,
      value: 1_000_000n,
      nonce: 3n,
      deadline: BigInt(NOW + 300),
    });
    const accepting = fakeReads({ allowance: 0n, tokenNonce: 3n });
    accepting.verifyHash.mockResolvedValue(true);
    expect(await verify(await pay({ permit2612: permit }), accepting)).toMatchObject({ isValid: true, applyPermit2612: true });
    expect(accepting.verifyHash.mock.calls).toEqual([[buyer.address, digest, concat([permit.r, permit.s, toHex(permit.v, { size: 1 })])]]);
    // The wallet's isValidSignature refuses it (or the owner has no code): not the owner's signature.
    expect(await reasonOf(pay({ permit2612: permit }), fakeReads({ allowance: 0n, tokenNonce: 3n }))).toBe(
      'invalid_permit2_2612_signature',
    );
  });
});

describe('verifyPermit2: each rule and its reason', () => {
  const now = BigInt(NOW);
  test.each<[string, string, () => Promise<{ payload: Permit2PaymentPayload; req: PaymentRequirements }>]>([
    [
      'payload and requirements name different networks',
      'invalid_network',
      async () => {
        const p = await pay();
        p.req.network = 'optimism-sepolia';
        return p;
      },
    ],
    [
      'schemes differ',
      'invalid_scheme',
      async () => {
        const p = await pay();
        p.req.scheme = 'upto';
        return p;
      },
    ],
    ['witness.to is not the facilitator', 'invalid_permit2_recipient_mismatch', () => pay({ witnessTo: OTHER })],
    ['payTo is not the facilitator', 'invalid_permit2_recipient_mismatch', () => pay({ payTo: OTHER })],
    ['upto witness.facilitator is another contract', 'upto_facilitator_mismatch', () => pay({ scheme: 'upto', witnessFacilitator: OTHER })],
    [
      'upto without witness.facilitator',
      'upto_facilitator_mismatch',
      async () => {
        const p = await pay({ scheme: 'upto' });
        delete p.payload.payload.witness.facilitator;
        return p;
      },
    ],
    ['token is not the asset', 'permit2_token_mismatch', () => pay({ asset: OTHER })],
    // The token's code runs in the settlement we pay gas for: only the network's listed token (issue 39).
    ['token and asset are a token we do not list', 'invalid_exact_evm_payload_asset_mismatch', () => pay({ token: OTHER, asset: OTHER })],
    [
      'exact: signed amount is not maxAmountRequired',
      'invalid_exact_evm_payload_amount_mismatch',
      () => pay({ maxAmountRequired: 999_999n }),
    ],
    [
      'upto: signed maximum is not maxAmountRequired',
      'invalid_exact_evm_payload_amount_mismatch',
      () => pay({ scheme: 'upto', maxAmountRequired: 2_000_000n }),
    ],
    [
      'upto: settleAmount above the maximum',
      'invalid_upto_evm_payload_settlement_exceeds_amount',
      () => pay({ scheme: 'upto', settleAmount: 1_000_001n }),
    ],
    ['upto: settleAmount 0', 'invalid_payment_requirements', () => pay({ scheme: 'upto', settleAmount: 0n })],
    ['exact with settleAmount', 'invalid_payment_requirements', () => pay({ settleAmount: 1n })],
    ['exact signed for the upto proxy', 'invalid_permit2_spender', () => pay({ spender: network.uptoPermit2Proxy })],
    ['upto signed for the exact proxy', 'invalid_permit2_spender', () => pay({ scheme: 'upto', spender: network.exactPermit2Proxy })],
    ['signed for some other spender', 'invalid_permit2_signature', () => pay({ spender: OTHER })],
    ['signed by someone else', 'invalid_permit2_signature', () => pay({ signer: stranger })],
    ['signed for another chain', 'invalid_permit2_signature', () => pay({ chainId: 1 })],
    ['signed for another Permit2', 'invalid_permit2_signature', () => pay({ permit2: OTHER })],
    ['deadline less than MIN_VALIDITY_SECONDS away', 'permit2_deadline_expired', () => pay({ deadline: now + BigInt(MIN_VALIDITY) - 1n })],
    ['deadline passed', 'permit2_deadline_expired', () => pay({ deadline: now - 1n })],
    ['validAfter in the future', 'permit2_not_yet_valid', () => pay({ validAfter: now + 1n })],
  ])('%s -> %s (no chain read)', async (_what, reason, make) => {
    const reads = fakeReads();
    expect(await reasonOf(make(), reads)).toBe(reason);
    expect(reads.balanceOf).not.toHaveBeenCalled();
    expect(reads.nonceBitmap).not.toHaveBeenCalled();
  });

  test('a field changed after signing breaks the signature (nonce, witness.validAfter, deadline)', async () => {
    for (const tamper of [
      (p: Permit2PaymentPayload) => void (p.payload.permit.nonce = '78'),
      (p: Permit2PaymentPayload) => void (p.payload.witness.validAfter = String(NOW - 599)),
      (p: Permit2PaymentPayload) => void (p.payload.permit.deadline = String(NOW + 301)),
    ]) {
      const p = await pay();
      tamper(p.payload);
      expect(await reasonOf(Promise.resolve(p))).toBe('invalid_permit2_signature');
    }
  });

  test('malformed signatures: 64 bytes, high s, garbage', async () => {
    const p = await pay();
    const sig = p.payload.payload.signature as Hex;
    const { r, s, yParity } = parseSignature(sig);
    const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const highS = serializeSignature({ r, s: numberToHex(N - hexToBigInt(s), { size: 32 }), yParity: yParity === 0 ? 1 : 0 });
    for (const bad of [sig.slice(0, 130) as Hex, highS, `0x${'11'.repeat(65)}` as Hex]) {
      expect(await reasonOf(Promise.resolve({ ...p, payload: { ...p.payload, payload: { ...p.payload.payload, signature: bad } } }))).toBe(
        'invalid_permit2_signature',
      );
    }
  });

  test('chain state: nonce used (409), balance short (402), allowance missing (402)', async () => {
    expect(await reasonOf(pay({ nonce: 300n }), fakeReads({ bitmap: 1n << (300n & 255n) }))).toBe('permit2_invalid_nonce');
    expect(await reasonOf(pay(), fakeReads({ balance: 999_999n }))).toBe('insufficient_funds');
    expect(await reasonOf(pay({ scheme: 'upto', amount: 5_000_000n, settleAmount: 100n }), fakeReads({ balance: 100n }))).toBe('valid');
    expect(await reasonOf(pay(), fakeReads({ allowance: 999_999n }))).toBe('permit2_allowance_required');
    expect(['permit2_invalid_nonce', 'insufficient_funds', 'permit2_allowance_required'].map(settleStatusFor)).toEqual([409, 402, 402]);
  });

  test('permit2612 problems', async () => {
    const base = { chainId: network.chainId!, usdc, permit2: network.permit2, nonce: 0n, deadline: BigInt(NOW + 300) };
    const state = fakeReads({ allowance: 0n });
    const reasonWith = async (permit: Awaited<ReturnType<typeof permit2612For>>, reads = state) =>
      reasonOf(pay({ permit2612: permit }), reads);
    expect(await reasonWith(await permit2612For(buyer, { ...base, value: 999_999n }))).toBe('permit2_2612_amount_mismatch');
    expect(await reasonWith(await permit2612For(buyer, { ...base, value: 1_000_000n, deadline: BigInt(NOW + 5) }))).toBe(
      'permit2_2612_deadline_expired',
    );
    expect(await reasonWith(await permit2612For(buyer, { ...base, value: 1_000_000n, signer: stranger }))).toBe(
      'invalid_permit2_2612_signature',
    );
    expect(await reasonWith(await permit2612For(buyer, { ...base, value: 1_000_000n, permit2: OTHER }))).toBe(
      'invalid_permit2_2612_signature',
    );
    expect(await reasonWith(await permit2612For(buyer, { ...base, value: 1_000_000n, nonce: 1n }))).toBe('invalid_permit2_2612_signature');
    expect(
      await reasonWith(await permit2612For(buyer, { ...base, value: 1_000_000n }), fakeReads({ allowance: 0n, noEip2612: true })),
    ).toBe('invalid_permit2_2612_signature');
    const good = await permit2612For(buyer, { ...base, value: 1_000_000n });
    expect(await reasonWith({ ...good, v: 29 })).toBe('invalid_permit2_2612_signature');
    // The high-s twin recovers to the owner too, but FiatToken's ECRecover refuses it.
    const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const twin = { ...good, s: numberToHex(N - hexToBigInt(good.s), { size: 32 }), v: good.v === 27 ? 28 : 27 };
    expect(await reasonWith(twin)).toBe('invalid_permit2_2612_signature');
    expect(await reasonWith(good)).toBe('valid');
  });

  test('a disabled network is invalid_network', async () => {
    const p = await pay();
    const v = await verifyPermit2(
      p.payload,
      p.req,
      { ...network, enabled: false },
      { nowSeconds: NOW, minValiditySeconds: MIN_VALIDITY, reads: fakeReads() },
    );
    expect(v).toEqual({ isValid: false, invalidReason: 'invalid_network', payer: buyer.address });
  });
});

test('uptoSettleAmount: extra.settleAmount, else maxAmountRequired', () => {
  const req = { maxAmountRequired: '500', extra: null } as unknown as PaymentRequirements;
  expect(uptoSettleAmount(req)).toBe(500n);
  expect(uptoSettleAmount({ ...req, extra: { settleAmount: '7' } })).toBe(7n);
});

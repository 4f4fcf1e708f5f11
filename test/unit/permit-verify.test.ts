import { domainSeparator, type Address, type Hex } from 'viem';
import { EIP2612_PERMIT_TYPES } from '../support/evm';
import { buildNetworkTable } from '../../src/chains/networks';
import { resolvePermitSignature } from '../../src/permit/signature';
import { deadlineProblem, verifyPermit, type PermitChainReads } from '../../src/permit/verify';
import type { PermitInput } from '../../src/permit/types';
import { TEST_ACCOUNTS } from '../support/accounts';

/**
 * verifyPermit is pure given its chain reads, so an in-memory token stands in for the chain here
 * (the integration tests run the same rules against anvil).
 */
const NOW = 1_700_000_000;
const MIN_VALIDITY = 6;
const owner = TEST_ACCOUNTS.buyers[4];
const stranger = TEST_ACCOUNTS.buyers[0];
const network = buildNetworkTable({}).get('base-sepolia')!;
const FACILITATOR = network.facilitator!;
const TOKEN = network.usdc!;
const RECIPIENT: Address = '0x000000000000000000000000000000000000dEaD';
const domain = { name: 'USDC', version: '2', chainId: network.chainId!, verifyingContract: TOKEN } as const;
const types = EIP2612_PERMIT_TYPES;

function fakeToken(state: { code?: boolean; separator?: Hex | undefined; nonce?: bigint | undefined } = {}) {
  const reads: PermitChainReads & Record<string, jest.Mock> = {
    hasCode: jest.fn(async () => state.code ?? true),
    domainSeparator: jest.fn(async () => ('separator' in state ? state.separator : domainSeparator({ domain }))),
    nonces: jest.fn(async () => ('nonce' in state ? state.nonce : 7n)),
  };
  return reads;
}

async function permit(
  o: { spender?: Address; nonce?: bigint; signer?: typeof owner; deadline?: bigint; requestSpender?: Address } = {},
): Promise<PermitInput> {
  const deadline = o.deadline ?? BigInt(NOW + 600);
  const signature = await (o.signer ?? owner).signTypedData({
    domain,
    types,
    primaryType: 'Permit',
    message: { owner: owner.address, spender: o.spender ?? FACILITATOR, value: 5_000_000n, nonce: o.nonce ?? 7n, deadline },
  });
  const sig = resolvePermitSignature({ signature } as never);
  if (!sig.ok) throw new Error(sig.message);
  return {
    workflowId: 'permit:test',
    organizationId: 'org',
    apiKeyId: '',
    network: 'base-sepolia',
    token: TOKEN,
    owner: owner.address,
    spender: o.requestSpender ?? o.spender ?? FACILITATOR,
    recipient: RECIPIENT,
    value: '5000000',
    deadline: deadline.toString(),
    v: sig.v,
    r: sig.r,
    s: sig.s,
  };
}
const verify = (input: PermitInput, reads = fakeToken()) =>
  verifyPermit(input, network, { nowSeconds: NOW, minValiditySeconds: MIN_VALIDITY, reads });

describe('verifyPermit', () => {
  test("the owner's permit for the facilitator at the current nonce is valid", async () => {
    const reads = fakeToken();
    expect(await verify(await permit(), reads)).toEqual({ ok: true, nonce: '7' });
    expect(reads.nonces).toHaveBeenCalledWith(TOKEN, owner.address);
  });

  test('a deadline in the past or within the minimum validity -> permit_execution_failed, no chain read', async () => {
    for (const deadline of [BigInt(NOW - 1), BigInt(NOW + MIN_VALIDITY - 1)]) {
      const reads = fakeToken();
      const out = await verify(await permit({ deadline }), reads);
      expect(out).toEqual({
        ok: false,
        reason: 'permit_execution_failed',
        message: expect.stringContaining(`deadline ${deadline} has passed`),
      });
      expect(reads.hasCode).not.toHaveBeenCalled();
    }
    expect((await verify(await permit({ deadline: BigInt(NOW + MIN_VALIDITY) }))).ok).toBe(true);
  });

  test('a token the network does not list -> permit_execution_failed, no chain read', async () => {
    const reads = fakeToken();
    const out = await verify({ ...(await permit()), token: RECIPIENT }, reads);
    expect(out).toEqual({
      ok: false,
      reason: 'permit_execution_failed',
      message: `tokenAddress ${RECIPIENT} is not a token this service settles`,
    });
    expect(reads.hasCode).not.toHaveBeenCalled();
  });

  test('a token address without code -> permit_execution_failed', async () => {
    const out = await verify(await permit(), fakeToken({ code: false }));
    expect(out).toEqual({
      ok: false,
      reason: 'permit_execution_failed',
      message: `tokenAddress ${TOKEN} is not a contract on base-sepolia`,
    });
  });

  test('a contract that is not an EIP-2612 token -> permit_execution_failed', async () => {
    for (const state of [{ separator: undefined }, { nonce: undefined }]) {
      const out = await verify(await permit(), fakeToken(state));
      expect(out).toEqual({ ok: false, reason: 'permit_execution_failed', message: expect.stringContaining('is not an EIP-2612 token') });
    }
  });

  test('signed by someone else, or for a stale nonce -> permit_execution_failed', async () => {
    for (const input of [await permit({ signer: stranger }), await permit({ nonce: 6n })]) {
      const out = await verify(input);
      expect(out).toEqual({ ok: false, reason: 'permit_execution_failed', message: expect.stringContaining('current nonce 7') });
      expect((out as { message: string }).message).not.toContain('spender must be');
    }
  });

  test('signed for the spender the request names, which is not the facilitator -> permit_execution_failed that says so', async () => {
    const out = await verify(await permit({ spender: RECIPIENT }));
    expect(out).toEqual({
      ok: false,
      reason: 'permit_execution_failed',
      message: expect.stringContaining(
        `the permit's spender must be the facilitator contract ${FACILITATOR}; the request names ${RECIPIENT}`,
      ),
    });
  });

  test('the request spender is informational: a permit signed for the facilitator is valid whatever the request says', async () => {
    expect((await verify(await permit({ requestSpender: RECIPIENT }))).ok).toBe(true);
  });
});

describe('deadlineProblem', () => {
  test('is undefined exactly from now + minValidity on', () => {
    expect(deadlineProblem(String(NOW + 6), NOW, 6)).toBeUndefined();
    expect(deadlineProblem(String(NOW + 5), NOW, 6)).toMatch(/has passed or is less than 6 s away/);
    expect(deadlineProblem('0', NOW, 0)).toBeDefined();
    expect(deadlineProblem(((1n << 256n) - 1n).toString(), NOW, 6)).toBeUndefined();
  });
});

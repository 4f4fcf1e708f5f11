import { domainSeparator, hashTypedData, hexToBigInt, numberToHex, parseSignature, type Address, type Hex } from 'viem';
import { EIP2612_PERMIT_TYPES } from '../support/evm';
import { isPermitSignedByOwner, permitDigest, permitSighash, resolvePermitSignature } from '../../src/permit/signature';
import { permitWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';

/** EIP-2612 signatures: both request forms, their normalisation, and recovery on the token's domain. */
const owner = TEST_ACCOUNTS.buyers[4];
const stranger = TEST_ACCOUNTS.buyers[0];
const TOKEN: Address = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const FACILITATOR: Address = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
const domain = { name: 'USDC', version: '2', chainId: 84532, verifyingContract: TOKEN } as const;
const types = EIP2612_PERMIT_TYPES;
const message = { owner: owner.address, spender: FACILITATOR, value: 1_000_000n, nonce: 3n, deadline: 1_800_000_000n };
const SEPARATOR = domainSeparator({ domain });
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const sign = (m = message, account = owner) => account.signTypedData({ domain, types, primaryType: 'Permit', message: m });
const split = (sig: Hex) => ({ r: `0x${sig.slice(2, 66)}` as Hex, s: `0x${sig.slice(66, 130)}` as Hex, v: parseInt(sig.slice(130), 16) });
const resolved = (x: Parameters<typeof resolvePermitSignature>[0]) => {
  const out = resolvePermitSignature(x);
  if (!out.ok) throw new Error(out.message);
  return out;
};
const refused = (x: Parameters<typeof resolvePermitSignature>[0]) => {
  const out = resolvePermitSignature(x);
  if (out.ok) throw new Error('expected a refusal');
  return out.message;
};

describe('resolvePermitSignature', () => {
  test('v/r/s and the 65-byte signature resolve to the same (v, r, s) and sighash', async () => {
    const sig = await sign();
    const parts = split(sig);
    const a = resolved({ v: parts.v, r: parts.r, s: parts.s, signature: undefined });
    const b = resolved({ v: undefined, r: undefined, s: undefined, signature: sig });
    expect(a).toEqual(b);
    expect(a).toEqual({ ok: true, v: parts.v, r: parts.r, s: parts.s, sighash: permitSighash(parts.v, parts.r, parts.s) });
  });

  test('a signature whose last byte is the y parity (0/1) is the same signature as 27/28', async () => {
    const sig = await sign();
    const { v } = split(sig);
    const parity = `${sig.slice(0, 130)}${numberToHex(v - 27, { size: 1 }).slice(2)}` as Hex;
    expect(resolved({ signature: parity } as never)).toEqual(resolved({ signature: sig } as never));
  });

  test('the sighash is keccak256(r || s || v) and does not depend on hex case', () => {
    const r = `0x${'AB'.repeat(32)}` as Hex;
    const s = `0x${'1c'.repeat(32)}` as Hex;
    expect(resolved({ v: 28, r, s } as never).sighash).toBe(permitSighash(28, r.toLowerCase() as Hex, s));
    expect(permitSighash(27, r, s)).not.toBe(permitSighash(28, r, s));
  });

  test.each([26, 29, 1, 255])('v %i -> refused (27 or 28 only)', (v) => {
    expect(refused({ v, r: `0x${'11'.repeat(32)}`, s: `0x${'22'.repeat(32)}` } as never)).toBe(`v must be 27 or 28, got ${v}`);
  });

  test('a signature recovery byte other than 0, 1, 27, 28 -> refused', () => {
    expect(refused({ signature: `0x${'11'.repeat(64)}1d` } as never)).toBe('signature: recovery byte must be 27 or 28 (or 0/1), got 29');
    expect(refused({ signature: `0x${'11'.repeat(64)}02` } as never)).toContain('got 2');
  });

  test('a partial v/r/s (v 0 counts as missing) -> refused', () => {
    expect(refused({ r: `0x${'11'.repeat(32)}`, s: `0x${'22'.repeat(32)}` } as never)).toBe(
      'v, r and s are needed together (v 0 counts as missing)',
    );
    expect(refused({ v: 27, r: `0x${'11'.repeat(32)}` } as never)).toContain('needed together');
  });

  test('zero r or s, and a high s (EIP-2), are refused', async () => {
    const parts = split(await sign());
    expect(refused({ v: 27, r: `0x${'00'.repeat(32)}`, s: parts.s } as never)).toBe('r and s must be non-zero');
    const highS = numberToHex(N - hexToBigInt(parts.s), { size: 32 });
    expect(refused({ v: parts.v === 27 ? 28 : 27, r: parts.r, s: highS } as never)).toBe(
      's is in the upper half of the curve order (EIP-2)',
    );
  });
});

describe('permitDigest and isPermitSignedByOwner', () => {
  test('the digest on the token DOMAIN_SEPARATOR equals the EIP-712 hash of the Permit', () => {
    expect(permitDigest(SEPARATOR, message)).toBe(hashTypedData({ domain, types, primaryType: 'Permit', message }));
    // Any address spelling gives the same digest.
    expect(permitDigest(SEPARATOR, { ...message, owner: owner.address.toLowerCase() as Address })).toBe(permitDigest(SEPARATOR, message));
  });

  test("recovers the owner's signature in either v form", async () => {
    const sig = await sign();
    const p = parseSignature(sig);
    expect(isPermitSignedByOwner(SEPARATOR, message, resolved({ signature: sig } as never))).toBe(true);
    expect(isPermitSignedByOwner(SEPARATOR, message, { v: Number(p.v) as 27 | 28, r: p.r, s: p.s })).toBe(true);
  });

  test.each([
    ['another spender', { spender: owner.address }],
    ['another value', { value: 1_000_001n }],
    ['another nonce', { nonce: 4n }],
    ['another deadline', { deadline: 1_800_000_001n }],
    ['another owner', { owner: stranger.address }],
  ])('a signature checked against %s -> false', async (_, patch) => {
    const sig = resolved({ signature: await sign() } as never);
    expect(isPermitSignedByOwner(SEPARATOR, { ...message, ...patch }, sig)).toBe(false);
  });

  test("another token's domain, a stranger's signature, the flipped v, and garbage -> false", async () => {
    const sig = resolved({ signature: await sign() } as never);
    const otherDomain = domainSeparator({ domain: { ...domain, version: '1' } });
    expect(isPermitSignedByOwner(otherDomain, message, sig)).toBe(false);
    expect(isPermitSignedByOwner(SEPARATOR, message, resolved({ signature: await sign(message, stranger) } as never))).toBe(false);
    expect(isPermitSignedByOwner(SEPARATOR, message, { ...sig, v: sig.v === 27 ? 28 : 27 })).toBe(false);
    expect(isPermitSignedByOwner(SEPARATOR, message, { v: 27, r: `0x${'ff'.repeat(32)}`, s: `0x${'01'.repeat(32)}` })).toBe(false);
  });
});

describe('permitWorkflowId', () => {
  const SIGHASH = `0x${'Ab'.repeat(32)}`;
  test('has the format permit:<network>:<token>:<owner>:<sighash> in lower case', () => {
    expect(permitWorkflowId('base-sepolia', TOKEN, owner.address, SIGHASH)).toBe(
      `permit:base-sepolia:${TOKEN.toLowerCase()}:${owner.address.toLowerCase()}:${SIGHASH.toLowerCase()}`,
    );
  });

  test('each part separates ids; spellings do not', () => {
    const id = permitWorkflowId('base-sepolia', TOKEN, owner.address, SIGHASH);
    expect(
      permitWorkflowId('base-sepolia', TOKEN.toLowerCase(), owner.address.toLowerCase(), SIGHASH.toUpperCase().replace('0X', '0x')),
    ).toBe(id);
    expect(permitWorkflowId('optimism-sepolia', TOKEN, owner.address, SIGHASH)).not.toBe(id);
    expect(permitWorkflowId('base-sepolia', FACILITATOR, owner.address, SIGHASH)).not.toBe(id);
    expect(permitWorkflowId('base-sepolia', TOKEN, stranger.address, SIGHASH)).not.toBe(id);
    expect(permitWorkflowId('base-sepolia', TOKEN, owner.address, `0x${'cd'.repeat(32)}`)).not.toBe(id);
  });

  test('fits the record and relayer-transaction id columns (200 / 220 chars) for the longest network id', () => {
    const id = permitWorkflowId('bot-chain-testnet', TOKEN, owner.address, SIGHASH);
    expect(id.length).toBeLessThanOrEqual(200);
    expect(`${id}:permit`.length).toBeLessThanOrEqual(220);
  });
});

import { concat, hashTypedData, isAddressEqual, size, toHex, type Address, type Hex } from 'viem';
import { isHighS, isSignedBy, type SignatureReads } from '../../chains/evm/buyer-signature';
import { isListedToken, type EvmNetwork } from '../../chains/networks';
import type { PaymentRequirements } from '../../x402/schemas';
import type { Permit2PaymentPayload } from './payload';
import type { SettleReason } from '../reasons';
import { permitDigest } from '../../permit/signature';
import { isNonceBitSet, permit2WitnessTypedData, type Permit2Scheme } from './typed-data';

/** Chain reads the Permit2 verification needs; the activity implements them with viem over RPC. */
export interface Permit2ChainReads extends SignatureReads {
  balanceOf(token: Address, owner: Address): Promise<bigint>;
  allowance(token: Address, owner: Address, spender: Address): Promise<bigint>;
  /** Permit2's `nonceBitmap(owner, wordPos)`. */
  nonceBitmap(permit2: Address, owner: Address, wordPos: bigint): Promise<bigint>;
  /** The token's EIP-2612 `DOMAIN_SEPARATOR()` and `nonces(owner)`; undefined when it has none. */
  eip2612(token: Address, owner: Address): Promise<{ domainSeparator: Hex; nonce: bigint } | undefined>;
}

/** A `permit2612` deploys nothing: no factory counts for its signature. */
const NO_FACTORIES = { walletFactories: [] };

export type Permit2Verification =
  | { isValid: true; payer: string; scheme: Permit2Scheme; amount: string; spender: Address; applyPermit2612: boolean }
  | { isValid: false; invalidReason: SettleReason; payer: string };

/** The amount an upto payment settles: `extra.settleAmount`, else the full signed maximum. */
export const uptoSettleAmount = (req: PaymentRequirements): bigint =>
  req.extra?.settleAmount !== undefined ? BigInt(req.extra.settleAmount) : BigInt(req.maxAmountRequired);

/** Whether the Permit2 signature is the owner's (EOA or smart wallet) for `spender`. */
function signedFor(
  scheme: Permit2Scheme,
  network: EvmNetwork,
  p: Permit2PaymentPayload['payload'],
  spender: Address,
  reads: SignatureReads,
): Promise<boolean> {
  const typed = permit2WitnessTypedData(scheme, network.chainId!, network.permit2, {
    permitted: { token: p.permit.permitted.token as Address, amount: BigInt(p.permit.permitted.amount) },
    spender,
    nonce: BigInt(p.permit.nonce),
    deadline: BigInt(p.permit.deadline),
    witness: {
      to: p.witness.to as Address,
      validAfter: BigInt(p.witness.validAfter),
      facilitator: p.witness.facilitator as Address | undefined,
    },
  });
  const hash = hashTypedData(typed as Parameters<typeof hashTypedData>[0]);
  return isSignedBy(network, reads, p.owner as Address, hash, p.signature as Hex);
}

/**
 * Verifies a Permit2 `exact` or `upto` payment before any transaction, in this order
 * (docs/decisions/permit.md): network, scheme, recipients, upto facilitator, token,
 * amount, signature and spender, deadline, validAfter; then the chain: nonce, balance, allowance
 * (or a valid `permit2612` for Permit2). Pure checks run first so a bad payment costs no RPC call.
 */
export async function verifyPermit2(
  payload: Permit2PaymentPayload,
  req: PaymentRequirements,
  network: EvmNetwork,
  opts: { nowSeconds: number; minValiditySeconds: number; reads: Permit2ChainReads },
): Promise<Permit2Verification> {
  const p = payload.payload;
  const payer = p.owner;
  const fail = (invalidReason: SettleReason): Permit2Verification => ({ isValid: false, invalidReason, payer });

  if (!network.enabled || network.chainId === undefined || payload.network !== req.network || network.id !== req.network) {
    return fail('invalid_network');
  }
  if (payload.scheme !== req.scheme) return fail('invalid_scheme');
  const scheme: Permit2Scheme = payload.scheme;
  const facilitator = network.facilitator as Address;
  if (!isAddressEqual(req.payTo as Address, facilitator) || !isAddressEqual(p.witness.to as Address, facilitator)) {
    return fail('invalid_permit2_recipient_mismatch');
  }
  if (scheme === 'upto' && (!p.witness.facilitator || !isAddressEqual(p.witness.facilitator as Address, facilitator))) {
    return fail('upto_facilitator_mismatch');
  }
  if (!isAddressEqual(p.permit.permitted.token as Address, req.asset as Address)) return fail('permit2_token_mismatch');
  // We call only tokens we list: the token's code runs inside the settlement we pay gas for.
  if (!isListedToken(network, req.asset)) return fail('invalid_exact_evm_payload_asset_mismatch');

  const permitted = BigInt(p.permit.permitted.amount);
  if (permitted !== BigInt(req.maxAmountRequired)) return fail('invalid_exact_evm_payload_amount_mismatch');
  let amount = permitted;
  if (scheme === 'upto') {
    amount = uptoSettleAmount(req);
    if (amount === 0n) return fail('invalid_payment_requirements');
    if (amount > permitted) return fail('invalid_upto_evm_payload_settlement_exceeds_amount');
  } else if (req.extra?.settleAmount !== undefined) {
    return fail('invalid_payment_requirements'); // settleAmount is upto only; never charge other than asked
  }

  // The signature must be the owner's for this scheme's proxy as spender. One made for the other
  // proxy is named as such (the buyer picked the wrong spender), anything else is a bad signature.
  const spender = scheme === 'exact' ? network.exactPermit2Proxy : network.uptoPermit2Proxy;
  const other = scheme === 'exact' ? network.uptoPermit2Proxy : network.exactPermit2Proxy;
  // Permit2 takes an EOA's 65-byte low-s signature (anything else would revert on-chain), or what a
  // smart wallet's EIP-1271 `isValidSignature` accepts (EIP-6492 before the wallet is deployed).
  const signature = p.signature as Hex;
  if (size(signature) < 65 || isHighS(signature)) return fail('invalid_permit2_signature');
  if (!(await signedFor(scheme, network, p, spender, opts.reads))) {
    const forOther = await signedFor(scheme, network, p, other, opts.reads);
    return fail(forOther ? 'invalid_permit2_spender' : 'invalid_permit2_signature');
  }

  const now = BigInt(opts.nowSeconds);
  if (BigInt(p.permit.deadline) < now + BigInt(opts.minValiditySeconds)) return fail('permit2_deadline_expired');
  if (BigInt(p.witness.validAfter) > now) return fail('permit2_not_yet_valid');

  const token = p.permit.permitted.token as Address;
  const owner = payer as Address;
  const nonce = BigInt(p.permit.nonce);
  const [word, balance, allowance] = await Promise.all([
    opts.reads.nonceBitmap(network.permit2, owner, nonce >> 8n),
    opts.reads.balanceOf(token, owner),
    opts.reads.allowance(token, owner, network.permit2),
  ]);
  if (isNonceBitSet(word, nonce)) return fail('permit2_invalid_nonce');
  if (balance < amount) return fail('insufficient_funds');
  let applyPermit2612 = false;
  if (allowance < amount) {
    const e = p.permit2612;
    if (!e) return fail('permit2_allowance_required');
    if (BigInt(e.value) < amount) return fail('permit2_2612_amount_mismatch');
    if (BigInt(e.deadline) < now + BigInt(opts.minValiditySeconds)) return fail('permit2_2612_deadline_expired');
    const domain = await opts.reads.eip2612(token, owner);
    const v = e.v < 27 ? e.v + 27 : e.v;
    // The contract calls the token's v/r/s `permit`, which FiatToken V2.2 checks as the 65 bytes
    // r‖s‖v: recovered for an EOA, asked of a wallet with code through its EIP-1271
    // `isValidSignature`. So a deployed smart wallet whose signature is 65 bytes is judged here as the
    // token will judge it; a longer one, or an EIP-6492 wrapper of a wallet not deployed yet, does not
    // fit the spec's v/r/s and fails as a signature that is not the owner's (docs/decisions/smart-wallet-buyers.md).
    const signed =
      domain !== undefined &&
      (v === 27 || v === 28) &&
      (await isSignedBy(
        NO_FACTORIES,
        opts.reads,
        owner,
        permitDigest(domain.domainSeparator, {
          owner,
          spender: network.permit2,
          value: BigInt(e.value),
          nonce: domain.nonce,
          deadline: BigInt(e.deadline),
        }),
        concat([e.r as Hex, e.s as Hex, toHex(v, { size: 1 })]),
      ));
    if (!signed) return fail('invalid_permit2_2612_signature');
    applyPermit2612 = true;
  }
  return { isValid: true, payer, scheme, amount: amount.toString(), spender, applyPermit2612 };
}

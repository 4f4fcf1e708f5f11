import { getAddress, hashTypedData, isAddressEqual, type Address, type Hex } from 'viem';
import { isSignedBy, type SignatureReads } from '../../chains/evm/buyer-signature';
import { isListedToken, type EvmNetwork } from '../../chains/networks';
import type { ExactEvmPayload, PaymentRequirements } from '../../x402/schemas';
import type { SettleReason } from '../reasons';
import { transferWithAuthorizationTypedData, type TokenDomain } from './typed-data';
import { windowTooLong } from '../../x402/window';

/** Chain reads the verification needs; the activity implements them with viem over RPC. */
export interface ExactEvmChainReads extends SignatureReads {
  balanceOf(token: Address, owner: Address): Promise<bigint>;
  authorizationState(token: Address, authorizer: Address, nonce: Hex): Promise<boolean>;
}

export type Verification = { isValid: true; payer: string } | { isValid: false; invalidReason: SettleReason; payer: string };

/**
 * Whether the payment's EIP-712 `TransferWithAuthorization` signature is the payer's under the token's
 * domain: an EOA's (65 bytes, low s: USDC rejects the high-s twin, so must we), checked without a call,
 * or a smart wallet's (EIP-1271, or EIP-6492 before it is deployed), asked of the chain
 * (src/chains/evm/buyer-signature.ts). The one signature rule of EIP-3009 (settle, verify, the top-up
 * gateway, chat and media payments).
 */
export async function isSignedByPayer(
  payload: ExactEvmPayload,
  domain: TokenDomain,
  network: Pick<EvmNetwork, 'walletFactories'>,
  reads: SignatureReads,
): Promise<boolean> {
  const a = payload.payload.authorization;
  // Any spelling of an address is accepted; the typed data needs checksummed ones.
  const checksummed = { ...a, from: getAddress(a.from.toLowerCase()), to: getAddress(a.to.toLowerCase()) };
  const typed = transferWithAuthorizationTypedData(domain, checksummed);
  return isSignedBy(network, reads, checksummed.from, hashTypedData(typed), payload.payload.signature as Hex);
}

/**
 * Verifies an EIP-3009 `exact` payment before any transaction, in this order (docs/decisions/settle-eip3009-same-chain.md):
 * network, scheme, recipients, asset, EIP-712 signature, validAfter, validBefore, value, balance, nonce.
 * Pure checks run first so a bad payment costs no RPC call.
 */
export async function verifyExactEvm(
  payload: ExactEvmPayload,
  req: PaymentRequirements,
  network: EvmNetwork,
  opts: { nowSeconds: number; minValiditySeconds: number; reads: ExactEvmChainReads },
): Promise<Verification> {
  const a = payload.payload.authorization;
  const payer = a.from;
  const fail = (invalidReason: SettleReason): Verification => ({ isValid: false, invalidReason, payer });

  if (!network.enabled || payload.network !== req.network || network.id !== req.network) return fail('invalid_network');
  if (network.permit2Only) return fail('unsupported_scheme');
  if (payload.scheme !== 'exact' || req.scheme !== 'exact') return fail('invalid_scheme');
  const facilitator = network.facilitator as Address;
  if (!isAddressEqual(req.payTo as Address, facilitator) || !isAddressEqual(a.to as Address, facilitator)) {
    return fail('invalid_exact_evm_payload_recipient_mismatch');
  }
  if (!isListedToken(network, req.asset)) return fail('invalid_exact_evm_payload_asset_mismatch');
  const name = req.extra?.name;
  const version = req.extra?.version;
  if (!name || !version) return fail('invalid_payment_requirements');

  const domain = { name, version, chainId: network.chainId as number, verifyingContract: getAddress(req.asset.toLowerCase()) };
  const signatureOk = await isSignedByPayer(payload, domain, network, opts.reads);
  if (!signatureOk) return fail('invalid_exact_evm_payload_signature');

  if (BigInt(a.validAfter) > BigInt(opts.nowSeconds)) return fail('invalid_exact_evm_payload_authorization_valid_after');
  if (BigInt(a.validBefore) < BigInt(opts.nowSeconds + opts.minValiditySeconds)) {
    return fail('invalid_exact_evm_payload_authorization_valid_before');
  }
  if (windowTooLong(BigInt(a.validBefore), opts.nowSeconds, req.maxTimeoutSeconds)) {
    return fail('invalid_exact_evm_payload_authorization_valid_before');
  }
  if (BigInt(a.value) !== BigInt(req.maxAmountRequired)) return fail('invalid_exact_evm_payload_authorization_value');

  const [balance, used] = await Promise.all([
    opts.reads.balanceOf(req.asset as Address, a.from as Address),
    opts.reads.authorizationState(req.asset as Address, a.from as Address, a.nonce as Hex),
  ]);
  if (balance < BigInt(a.value)) return fail('insufficient_funds');
  if (used) return fail('invalid_exact_evm_payload_authorization_nonce_used');
  return { isValid: true, payer };
}

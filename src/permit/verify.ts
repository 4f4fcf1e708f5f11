import type { Address, Hex } from 'viem';
import { isListedToken, type EvmNetwork } from '../chains/networks';
import { isPermitSignedByOwner } from './signature';
import type { PermitInput } from './types';

/** Chain reads the verification needs; the activity implements them with viem over RPC. */
export interface PermitChainReads {
  hasCode(token: Address): Promise<boolean>;
  /** `undefined` when the contract does not answer it (not an EIP-2612 token). */
  domainSeparator(token: Address): Promise<Hex | undefined>;
  nonces(token: Address, owner: Address): Promise<bigint | undefined>;
}

/** A bad permit (expired, not the owner's, a stale nonce, another spender) is the spec's `permit_execution_failed`. */
export type PermitVerification = { ok: true; nonce: string } | { ok: false; reason: 'permit_execution_failed'; message: string };

/**
 * A deadline that has passed, or passes before the transaction can be mined (`minValiditySeconds`):
 * the permit can no longer be applied, so nothing is sent (docs/decisions/permit.md).
 */
export function deadlineProblem(deadline: string, nowSeconds: number, minValiditySeconds: number): string | undefined {
  if (BigInt(deadline) < BigInt(nowSeconds + minValiditySeconds)) {
    return `deadline ${deadline} has passed or is less than ${minValiditySeconds} s away (now ${nowSeconds})`;
  }
  return undefined;
}

/**
 * Verifies a permit before any transaction, in this order: deadline, token is listed, token is a contract, token
 * answers DOMAIN_SEPARATOR() and nonces(owner), and (v, r, s) is the owner's EIP-2612 signature of
 * Permit(owner, spender = facilitator, value, current nonce, deadline) under that domain.
 */
export async function verifyPermit(
  input: PermitInput,
  network: EvmNetwork,
  opts: { nowSeconds: number; minValiditySeconds: number; reads: PermitChainReads },
): Promise<PermitVerification> {
  const late = deadlineProblem(input.deadline, opts.nowSeconds, opts.minValiditySeconds);
  if (late) return { ok: false, reason: 'permit_execution_failed', message: late };
  // The API refuses an unlisted token (400 invalid_request); this holds for any workflow input too.
  if (!isListedToken(network, input.token)) {
    return { ok: false, reason: 'permit_execution_failed', message: `tokenAddress ${input.token} is not a token this service settles` };
  }
  const token = input.token as Address;
  const owner = input.owner as Address;
  if (!(await opts.reads.hasCode(token))) {
    return { ok: false, reason: 'permit_execution_failed', message: `tokenAddress ${input.token} is not a contract on ${network.id}` };
  }
  const [domainSeparator, nonce] = await Promise.all([opts.reads.domainSeparator(token), opts.reads.nonces(token, owner)]);
  if (domainSeparator === undefined || nonce === undefined) {
    return {
      ok: false,
      reason: 'permit_execution_failed',
      message: `tokenAddress ${input.token} is not an EIP-2612 token (no DOMAIN_SEPARATOR() or nonces())`,
    };
  }
  const facilitator = network.facilitator as Address;
  const signed = isPermitSignedByOwner(
    domainSeparator,
    { owner, spender: facilitator, value: BigInt(input.value), nonce, deadline: BigInt(input.deadline) },
    input,
  );
  if (!signed) {
    const spenderHint =
      input.spender.toLowerCase() === facilitator.toLowerCase()
        ? ''
        : ` (the permit's spender must be the facilitator contract ${facilitator}; the request names ${input.spender})`;
    return {
      ok: false,
      reason: 'permit_execution_failed',
      message: `the signature is not the owner's permit for this token, value, deadline and current nonce ${nonce}${spenderHint}`,
    };
  }
  return { ok: true, nonce: nonce.toString() };
}

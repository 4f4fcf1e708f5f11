import { randomBytes } from 'node:crypto';
import { hexToBigInt, parseSignature, type Address, type Hex, type LocalAccount } from 'viem';
import { EIP2612_PERMIT_TYPES } from './evm';

/**
 * Builds what a seller sends to POST /v1/settle for a Permit2 payment, signed exactly as an x402
 * buyer signs it with viem: PermitWitnessTransferFrom under {name: 'Permit2', chainId,
 * verifyingContract: Permit2}, spender = the scheme's proxy, witness {to, validAfter} (exact) or
 * {to, facilitator, validAfter} (upto). The types are written out here, independent of the service.
 */
export interface Permit2PaymentOptions {
  scheme: 'exact' | 'upto';
  buyer: LocalAccount;
  network: string;
  chainId: number;
  usdc: Address;
  facilitator: Address;
  permit2: Address;
  exactProxy: Address;
  uptoProxy: Address;
  /** The signed amount (upto: the maximum); default 1 USDC. */
  amount?: bigint;
  maxAmountRequired?: bigint;
  settleAmount?: bigint | string;
  nonce?: bigint;
  deadline?: bigint;
  validAfter?: bigint;
  witnessTo?: Address;
  witnessFacilitator?: Address;
  payTo?: Address;
  asset?: Address;
  token?: Address;
  /** Sign for this spender instead of the scheme's proxy. */
  spender?: Address;
  /** Sign with this account instead of the buyer (a forged signature). */
  signer?: LocalAccount;
  permit2612?: { value: string; deadline: string; v: number; r: Hex; s: Hex };
}

/** Permit2's typed data as a buyer's wallet writes it (kept apart from the service's copy on purpose). */
export const TOKEN_PERMISSIONS = [
  { name: 'token', type: 'address' },
  { name: 'amount', type: 'uint256' },
] as const;
export const PERMIT_WITNESS_TRANSFER_FROM = [
  { name: 'permitted', type: 'TokenPermissions' },
  { name: 'spender', type: 'address' },
  { name: 'nonce', type: 'uint256' },
  { name: 'deadline', type: 'uint256' },
  { name: 'witness', type: 'Witness' },
] as const;

export const randomPermit2Nonce = (): bigint => hexToBigInt(`0x${randomBytes(32).toString('hex')}`);

export async function permit2Payment(o: Permit2PaymentOptions) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const amount = o.amount ?? 1_000_000n;
  const token = o.token ?? o.usdc;
  const nonce = o.nonce ?? randomPermit2Nonce();
  const deadline = o.deadline ?? now + 300n;
  const validAfter = o.validAfter ?? now - 600n;
  const to = o.witnessTo ?? o.facilitator;
  const facilitator = o.witnessFacilitator ?? o.facilitator;
  const spender = o.spender ?? (o.scheme === 'exact' ? o.exactProxy : o.uptoProxy);
  const signer = o.signer ?? o.buyer;
  const domain = { name: 'Permit2', chainId: o.chainId, verifyingContract: o.permit2 } as const;
  const permitted = { token, amount };
  const signature =
    o.scheme === 'exact'
      ? await signer.signTypedData({
          domain,
          types: {
            PermitWitnessTransferFrom: PERMIT_WITNESS_TRANSFER_FROM,
            TokenPermissions: TOKEN_PERMISSIONS,
            Witness: [
              { name: 'to', type: 'address' },
              { name: 'validAfter', type: 'uint256' },
            ],
          },
          primaryType: 'PermitWitnessTransferFrom',
          message: { permitted, spender, nonce, deadline, witness: { to, validAfter } },
        })
      : await signer.signTypedData({
          domain,
          types: {
            PermitWitnessTransferFrom: PERMIT_WITNESS_TRANSFER_FROM,
            TokenPermissions: TOKEN_PERMISSIONS,
            Witness: [
              { name: 'to', type: 'address' },
              { name: 'facilitator', type: 'address' },
              { name: 'validAfter', type: 'uint256' },
            ],
          },
          primaryType: 'PermitWitnessTransferFrom',
          message: { permitted, spender, nonce, deadline, witness: { to, facilitator, validAfter } },
        });
  const witness = o.scheme === 'exact' ? { to, validAfter: validAfter.toString() } : { to, facilitator, validAfter: validAfter.toString() };
  const extra: Record<string, unknown> = { name: 'USDC', version: '2' };
  if (o.settleAmount !== undefined) extra.settleAmount = o.settleAmount.toString();
  return {
    paymentPayload: {
      x402Version: 1,
      scheme: o.scheme,
      network: o.network,
      payload: {
        signature,
        owner: o.buyer.address,
        permit: { permitted: { token, amount: amount.toString() }, nonce: nonce.toString(), deadline: deadline.toString() },
        witness,
        ...(o.permit2612 ? { permit2612: o.permit2612 } : {}),
      },
    },
    paymentRequirements: {
      scheme: o.scheme,
      network: o.network,
      maxAmountRequired: (o.maxAmountRequired ?? amount).toString(),
      resource: 'https://seller.example/inference',
      description: 'metered inference',
      mimeType: 'application/json',
      payTo: o.payTo ?? o.facilitator,
      maxTimeoutSeconds: 300,
      asset: o.asset ?? o.usdc,
      extra,
    },
  };
}

/** The owner's EIP-2612 permit for Permit2 on the devnet USDC ({name: 'USDC', version: '2'}), as `payload.permit2612`. */
export async function permit2612For(
  owner: LocalAccount,
  o: { chainId: number; usdc: Address; permit2: Address; value: bigint; nonce: bigint; deadline?: bigint; signer?: LocalAccount },
) {
  const deadline = o.deadline ?? BigInt(Math.floor(Date.now() / 1000)) + 300n;
  const signature = await (o.signer ?? owner).signTypedData({
    domain: { name: 'USDC', version: '2', chainId: o.chainId, verifyingContract: o.usdc },
    types: EIP2612_PERMIT_TYPES,
    primaryType: 'Permit',
    message: { owner: owner.address, spender: o.permit2, value: o.value, nonce: o.nonce, deadline },
  });
  const { r, s, v } = parseSignature(signature);
  return { value: o.value.toString(), deadline: deadline.toString(), v: Number(v), r, s };
}

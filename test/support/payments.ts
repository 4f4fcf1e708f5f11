import { randomBytes } from 'node:crypto';
import type { Address, Hex, LocalAccount } from 'viem';
import { transferWithAuthorizationTypedData } from '../../src/schemes/eip3009/typed-data';

/** Builds what a seller sends to POST /v1/settle, signed exactly as an x402 v1 buyer signs it. */
export interface ExactPaymentOptions {
  buyer: LocalAccount;
  network: string;
  chainId: number;
  usdc: Address;
  facilitator: Address;
  value?: bigint;
  maxAmountRequired?: bigint;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: Hex;
  to?: Address;
  payTo?: Address;
  asset?: Address;
  extra?: Record<string, unknown>;
  /** Sign with this account instead of the buyer (a forged signature). */
  signer?: LocalAccount;
}

export async function exactPayment(o: ExactPaymentOptions) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const value = o.value ?? 1_000_000n;
  const authorization = {
    from: o.buyer.address,
    to: o.to ?? o.facilitator,
    value: value.toString(),
    validAfter: (o.validAfter ?? now - 600n).toString(),
    validBefore: (o.validBefore ?? now + 300n).toString(),
    nonce: o.nonce ?? (`0x${randomBytes(32).toString('hex')}` as Hex),
  };
  const typed = transferWithAuthorizationTypedData(
    { name: 'USDC', version: '2', chainId: o.chainId, verifyingContract: o.usdc },
    authorization,
  );
  const signature = await (o.signer ?? o.buyer).signTypedData(typed);
  return {
    paymentPayload: { x402Version: 1, scheme: 'exact', network: o.network, payload: { signature, authorization } },
    paymentRequirements: {
      scheme: 'exact',
      network: o.network,
      maxAmountRequired: (o.maxAmountRequired ?? value).toString(),
      resource: 'https://seller.example/weather',
      description: 'weather report',
      mimeType: 'application/json',
      payTo: o.payTo ?? o.facilitator,
      maxTimeoutSeconds: 300,
      asset: o.asset ?? o.usdc,
      extra: o.extra ?? { name: 'USDC', version: '2' },
    },
  };
}

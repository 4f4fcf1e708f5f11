import { getAddress, type Address, type Hex, type LocalAccount } from 'viem';
import type * as X402Fetch from '@x402/fetch/dist/cjs/index';
import type { ExactEvmSchemeV1 as ExactEvmSchemeV1Type } from '@x402/evm/dist/cjs/v1';

/**
 * `@x402/fetch` (the v2 client, which also pays v1 challenges) with `@x402/evm`'s exact schemes (v1
 * and v2) over a viem account, as the top-up smoke and tests use it. Their type declarations sit where this
 * CommonJS build's module resolution does not look; Node resolves both packages at run time.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const x402Fetch = require('@x402/fetch') as typeof X402Fetch;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ExactEvmSchemeV1, EVM_NETWORK_CHAIN_ID_MAP } = require('@x402/evm/v1') as {
  ExactEvmSchemeV1: typeof ExactEvmSchemeV1Type;
  EVM_NETWORK_CHAIN_ID_MAP: Record<string, number>;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ExactEvmScheme } = require('@x402/evm/exact/client') as { ExactEvmScheme: new (signer: LocalAccount) => object };

/** The scheme with its (TypeScript-private) signing step open to a subclass. */
const ExactV1Base = ExactEvmSchemeV1 as unknown as new (signer: LocalAccount) => Pick<
  InstanceType<typeof ExactEvmSchemeV1Type>,
  'scheme' | 'createPaymentPayload'
> & {
  signAuthorization(a: unknown, r: unknown): Promise<Hex>;
};

const TRANSFER_WITH_AUTHORIZATION = [
  { name: 'from', type: 'address' },
  { name: 'to', type: 'address' },
  { name: 'value', type: 'uint256' },
  { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' },
  { name: 'nonce', type: 'bytes32' },
] as const;

/**
 * The library's v1 exact EVM scheme for a network its v1 table lacks (it has no `optimism`: the
 * chain id lookup throws): the same authorization, signed for the given chain id.
 */
class ExactV1WithChainId extends ExactV1Base {
  constructor(
    private readonly account: LocalAccount,
    private readonly chainId: number,
  ) {
    super(account);
  }
  override async signAuthorization(authorization: any, requirements: any): Promise<Hex> {
    return this.account.signTypedData({
      domain: {
        name: requirements.extra.name,
        version: requirements.extra.version,
        chainId: this.chainId,
        verifyingContract: getAddress(requirements.asset),
      },
      types: { TransferWithAuthorization: TRANSFER_WITH_AUTHORIZATION },
      primaryType: 'TransferWithAuthorization',
      message: {
        from: getAddress(authorization.from),
        to: getAddress(authorization.to),
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce,
      },
    });
  }
}

/**
 * A payer that pays `exact` on `network` only (so it picks that entry of `accepts`), allowed to spend
 * `asset` there (the client's spend controls only know mainnet USDC addresses). Registered for both
 * protocol versions, as @x402/fetch users register it: the client pays v2 when the 402 carries a
 * `PAYMENT-REQUIRED` header (ours do), and v1 from the body otherwise.
 */
export function exactPayer(account: LocalAccount, network: string, chainId: number, asset: Address): X402Fetch.x402Client {
  const v1 = EVM_NETWORK_CHAIN_ID_MAP[network] === chainId ? new ExactEvmSchemeV1(account) : new ExactV1WithChainId(account, chainId);
  const caip2 = `eip155:${chainId}`;
  const client = new x402Fetch.x402Client().registerV1(network, v1 as any).register(caip2 as any, new ExactEvmScheme(account) as any);
  client.setSpendControls({
    allowedAssets: [
      { network, asset },
      { network: caip2, asset },
    ],
  } as any);
  return client;
}

import type { Address, LocalAccount } from 'viem';

/**
 * x402 v2 buyers with the real SDKs: `@x402/fetch` 2.x and `@x402/evm`'s exact scheme over a viem
 * account. CommonJS builds, required at run time (their declarations sit where this build's module
 * resolution does not look).
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const { ExactEvmScheme } = require('@x402/evm/exact/client');
const { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } = require('@x402/fetch');
/* eslint-enable @typescript-eslint/no-require-imports */

export { decodePaymentResponseHeader };

/**
 * A fetch that pays v2 challenges on `network` (CAIP-2) with `schemes` (default: the exact EVM scheme)
 * and `asset` allowed (the SDK's spend controls know only public USDC addresses), recording every
 * PAYMENT-SIGNATURE payload it sends.
 */
export function v2Payer(
  account: LocalAccount | { address: string },
  network: string,
  asset: Address | string,
  schemes: unknown[] = [new ExactEvmScheme(account)],
) {
  const client = new x402Client();
  for (const scheme of schemes) client.register(network, scheme);
  client.setSpendControls({ allowedAssets: [{ network, asset }] });
  const sent: Record<string, any>[] = [];
  const recording: typeof fetch = async (input, init) => {
    const headers = input instanceof Request ? input.headers : new Headers(init?.headers);
    const signature = headers.get('payment-signature');
    if (signature) sent.push(JSON.parse(Buffer.from(signature, 'base64').toString('utf8')));
    return fetch(input, init);
  };
  return { pay: wrapFetchWithPayment(recording, client) as typeof fetch, sent };
}

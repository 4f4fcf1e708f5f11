import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWalletClient, defineChain, http } from 'viem';
import { wrapFetchWithPayment } from 'x402-fetch';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { TEST_ACCOUNTS } from './accounts';
import type { SettleHarness } from './settle-harness';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * Seller apps built with the real x402 SDKs, with our API as their facilitator: the auth headers both
 * SDK generations send, a v2 `HTTPFacilitatorClient`, an express app served on a free port, and
 * buyers funded with devnet USDC. CommonJS builds, required at run time.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const express = require('express') as () => any;
const { HTTPFacilitatorClient } = require('@x402/core/server');
/* eslint-enable @typescript-eslint/no-require-imports */

/** `createAuthHeaders` of both SDK generations: our Bearer key on every facilitator call. */
export function facilitatorAuth(h: SettleHarness) {
  const auth = { Authorization: `Bearer ${h.apiKey}` };
  return async () => ({ verify: auth, settle: auth, supported: auth });
}

/** `@x402/core`'s facilitator client pointed at our `/v1`. */
export const v2Facilitator = (h: SettleHarness) =>
  new HTTPFacilitatorClient({ url: `${h.api.baseUrl}/v1`, createAuthHeaders: facilitatorAuth(h) });

/** An express app set up by `build`, served on 127.0.0.1 until `close`. */
export async function serveSeller(build: (app: any) => void): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  build(app);
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A fresh buyer holding `amount` of the devnet USDC on base-sepolia (no ETH). */
export async function fundedBuyer(h: SettleHarness, amount = 5_000_000n): Promise<PrivateKeyAccount> {
  const buyer = privateKeyToAccount(generatePrivateKey());
  const funder = createWalletClient({ account: TEST_ACCOUNTS.buyers[0], transport: http(h.stack.chains['base-sepolia'].rpcUrl) });
  const hash = await funder.writeContract({
    chain: null,
    address: h.stack.usdc,
    abi: tokenAbi,
    functionName: 'transfer',
    args: [buyer.address, amount],
  });
  await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  return buyer;
}

/**
 * An `x402-fetch` 1.2 buyer on the devnet base-sepolia chain (chain id 84532, from which the SDK
 * derives the network), paying up to `maxValue`, recording every X-PAYMENT it sends.
 */
export function v1Payer(h: SettleHarness, account: PrivateKeyAccount, maxValue: bigint) {
  const rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  const chain = defineChain({
    id: 84532,
    name: 'base-sepolia (devnet)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const payment = new Headers(init?.headers).get('x-payment');
    if (payment) sent.push(payment);
    return fetch(input, init);
  };
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) });
  return { pay: wrapFetchWithPayment(recording, wallet as any, maxValue) as typeof fetch, sent };
}

/**
 * An `@x402/express` 2.x seller of `GET /weather` for `price` of the devnet USDC on base-sepolia, paid to
 * our facilitator contract, whose facilitator is our API (`v2Facilitator`): how a v2 seller uses us.
 */
export function serveV2WeatherSeller(h: SettleHarness, price: bigint): Promise<{ url: string; close(): Promise<void> }> {
  /* eslint-disable @typescript-eslint/no-require-imports -- CommonJS builds whose declarations sit where this build does not look */
  const { paymentMiddleware, x402ResourceServer } = require('@x402/express');
  const { ExactEvmScheme: ExactEvmServer } = require('@x402/evm/exact/server');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const network = 'eip155:84532';
  const resourceServer = new x402ResourceServer(v2Facilitator(h)).register(network, new ExactEvmServer());
  return serveSeller((app) => {
    app.use(
      paymentMiddleware(
        {
          'GET /weather': {
            accepts: {
              scheme: 'exact',
              network,
              // Our devnet USDC (the SDK's default asset table knows only the public one), paid to our facilitator contract.
              price: { amount: price.toString(), asset: h.stack.usdc, extra: { name: 'USDC', version: '2' } },
              payTo: h.stack.facilitator,
              maxTimeoutSeconds: 120,
            },
            description: 'weather report',
          },
        },
        resourceServer,
      ),
    );
    app.get('/weather', (_req: unknown, res: { json(b: unknown): void }) => res.json({ forecast: 'sunny' }));
  });
}

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWalletClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { tokenAbi } from '../../src/chains/evm/abi';
import { TEST_ACCOUNTS } from './accounts';
import type { SettleHarness } from './settle-harness';

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

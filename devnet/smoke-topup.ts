/**
 * `npx tsx devnet/smoke-topup.ts [amount]`: the README's top-up example against a running
 * `npm start`. The first demo buyer pays the gateway's 402 challenge with `@x402/fetch` (the v2
 * client, paying the v1 challenge with `@x402/evm`'s v1 exact scheme) and a viem account on the
 * devnet `base` chain; checks the deposited record and the merchant balance change. Exits non-zero
 * when anything is off. (The legacy `x402-fetch` 1.x rejects the whole challenge once it lists
 * `optimism`, a network outside its v1 enum.)
 */
import { createPublicClient, http, type Address } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { buildNetworkTable } from '../src/chains/networks';
import { loadTopupConfig } from '../src/topup/config';
import { DEMO_BUYERS } from './demo-accounts';
import { topupDevnetEnv } from './start-topup';
import { exactPayer, x402Fetch } from './x402-v2-client';
import { merchantAbi } from '../src/chains/evm/abi';

async function main() {
  const env = { ...process.env, ...topupDevnetEnv(process.env) };
  const topup = loadTopupConfig(env);
  const base = buildNetworkTable(env).get('base')!;
  const amount = BigInt(process.argv[2] ?? '5000000');
  const buyer = privateKeyToAccount(DEMO_BUYERS[0]!.privateKey);
  const chain = {
    id: base.chainId!,
    name: 'base',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: base.rpcUrls } },
  } as const;
  const client = createPublicClient({ chain, transport: http() });
  const balance = () =>
    client.readContract({
      address: topup.TOPUP_MERCHANT_CONTRACT as Address,
      abi: merchantAbi,
      functionName: 'balanceOf',
      args: [buyer.address],
    });

  const before = await balance();
  const pay = x402Fetch.wrapFetchWithPayment(fetch, exactPayer(buyer, 'base', base.chainId!, base.usdc as Address));
  const res = await pay(`${topup.topupUrl}/v1/${topup.TOPUP_MERCHANT_ID}/topups`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount: amount.toString() }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  process.stdout.write(`${res.status} ${JSON.stringify(body, null, 2)}\n`);
  const after = await balance();
  process.stdout.write(`merchant balance of ${buyer.address}: ${before} -> ${after}\n`);
  if (res.status !== 200 || body.state !== 'deposited' || after - before !== BigInt(String(body.netAmount))) {
    throw new Error('top-up smoke failed');
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

/**
 * `npx tsx devnet/smoke-topup-crosschain.ts [amount]`: a cross-chain top-up against a running
 * `npm start`. The second demo buyer pays the gateway's 402 challenge on the devnet `optimism` chain
 * (10) with `@x402/fetch` and a viem account; the gateway bridges it to `base` and deposits. A 503
 * (`bridging`) is polled on `GET /v1/{merchant}/topups/{id}` until final. Checks the exact credit and
 * the payer's debit on optimism; exits non-zero when anything is off.
 */
import { createPublicClient, http, type Address } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { buildNetworkTable } from '../src/chains/networks';
import { loadTopupConfig } from '../src/topup/config';
import { DEMO_BUYERS } from './demo-accounts';
import { topupDevnetEnv } from './start-topup';
import { exactPayer, x402Fetch } from './x402-v2-client';
import { merchantAbi, tokenAbi } from '../src/chains/evm/abi';

async function main() {
  const env = { ...process.env, ...topupDevnetEnv(process.env) };
  const topup = loadTopupConfig(env);
  const networks = buildNetworkTable(env);
  const base = networks.get('base')!;
  const optimism = networks.get('optimism')!;
  const amount = BigInt(process.argv[2] ?? '5000000');
  const buyer = privateKeyToAccount(DEMO_BUYERS[1]!.privateKey);
  const baseClient = createPublicClient({ transport: http(base.rpcUrls[0]) });
  const opClient = createPublicClient({ transport: http(optimism.rpcUrls[0]) });
  const credit = () =>
    baseClient.readContract({
      address: topup.TOPUP_MERCHANT_CONTRACT as Address,
      abi: merchantAbi,
      functionName: 'balanceOf',
      args: [buyer.address],
    });
  const opUsdc = () =>
    opClient.readContract({ address: optimism.usdc as Address, abi: tokenAbi, functionName: 'balanceOf', args: [buyer.address] });

  const [creditBefore, opBefore] = [await credit(), await opUsdc()];
  const url = `${topup.topupUrl}/v1/${topup.TOPUP_MERCHANT_ID}/topups`;
  const pay = x402Fetch.wrapFetchWithPayment(fetch, exactPayer(buyer, 'optimism', optimism.chainId!, optimism.usdc as Address));
  const res = await pay(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount: amount.toString() }),
  });
  let body = (await res.json()) as Record<string, unknown>;
  process.stdout.write(
    `${res.status} ${res.headers.get('retry-after') ? `(Retry-After ${res.headers.get('retry-after')}) ` : ''}${JSON.stringify(body)}\n`,
  );
  for (let i = 0; i < 120 && res.status === 503 && !['deposited', 'refunded', 'failed', 'needs_review'].includes(String(body.state)); i++) {
    await new Promise((r) => setTimeout(r, 1000));
    body = (await (await fetch(`${url}/${encodeURIComponent(String(body.topupId))}`)).json()) as Record<string, unknown>;
  }
  process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
  const [creditAfter, opAfter] = [await credit(), await opUsdc()];
  process.stdout.write(
    `merchant balance of ${buyer.address} on base: ${creditBefore} -> ${creditAfter}; USDC on optimism: ${opBefore} -> ${opAfter}\n`,
  );
  if (
    body.state !== 'deposited' ||
    !body.fillTx ||
    creditAfter - creditBefore !== BigInt(String(body.netAmount)) ||
    opBefore - opAfter !== amount
  ) {
    throw new Error('cross-chain top-up smoke failed');
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

/**
 * `npm run smoke [network]`: the README's "try it" step, against a running `npm start`.
 *
 * Signs in with a fresh account (SIWE), sets the organization's test payout wallet, creates a test
 * API key, then settles 1 USDC from the first demo buyer through POST /v1/settle and checks the
 * balances moved. Exits non-zero when anything is off. Network defaults to base-sepolia.
 *
 *   API_URL   where to send requests (default: the API's PUBLIC_URL, http://localhost:4021)
 */
import { randomBytes } from 'node:crypto';
import { createSiweMessage } from 'viem/siwe';
import { createPublicClient, formatUnits, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../src/config';
import { buildNetworkTable, isEvmNetworkId } from '../src/chains/networks';
import { transferWithAuthorizationTypedData } from '../src/schemes/eip3009/typed-data';
import { DEVNET_USDC_NAME, DEVNET_USDC_VERSION } from './deploy';
import { DEMO_BUYERS } from './demo-accounts';
import { tokenAbi } from '../src/chains/evm/abi';

const AMOUNT = 1_000_000n; // 1 USDC

const config = loadConfig();
const publicUrl = config.publicUrl; // the SIWE domain must be its host
const api = (process.env.API_URL ?? publicUrl).replace(/\/$/, '');
const networkId = process.argv[2] ?? 'base-sepolia';

const step = (text: string) => process.stdout.write(`${text}\n`);

class SmokeError extends Error {}

/** One JSON request; keeps cookies from Set-Cookie in `jar`. */
async function call<T = any>(
  method: string,
  path: string,
  opts: { json?: unknown; jar?: Map<string, string>; bearer?: string } = {},
): Promise<{ status: number; body: T; ms: number }> {
  const headers: Record<string, string> = {};
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  if (opts.jar?.size) headers.cookie = [...opts.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
  const started = performance.now();
  const res = await fetch(`${api}${path}`, {
    method,
    headers,
    body: opts.json === undefined ? undefined : JSON.stringify(opts.json),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  const ms = Math.round(performance.now() - started);
  if (opts.jar) {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      const eq = pair.indexOf('=');
      opts.jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  }
  const body = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
  return { status: res.status, body: body as T, ms };
}

function expectStatus(what: string, res: { status: number; body: unknown }, status: number): void {
  if (res.status !== status) throw new SmokeError(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
}

async function main(): Promise<void> {
  if (!isEvmNetworkId(networkId)) throw new SmokeError(`unknown network ${networkId}`);
  const network = buildNetworkTable().get(networkId)!;
  if (!network.enabled || !network.usdc || !network.facilitator) throw new SmokeError(`network ${networkId} is not enabled here`);

  try {
    await fetch(`${api}/healthz`, { signal: AbortSignal.timeout(3000) });
  } catch {
    throw new SmokeError(`no API at ${api}: start the stack with \`npm start\` first (or set API_URL)`);
  }

  // 1. Sign in with a fresh account: nonce, EIP-4361 message, signature, verify.
  const owner = privateKeyToAccount(generatePrivateKey());
  const jar = new Map<string, string>();
  const nonce = await call<{ nonce: string }>('GET', '/v1/auth/nonce');
  expectStatus('GET /v1/auth/nonce', nonce, 200);
  const message = createSiweMessage({
    domain: new URL(publicUrl).host,
    address: owner.address,
    uri: publicUrl,
    version: '1',
    chainId: network.chainId!,
    nonce: nonce.body.nonce,
    issuedAt: new Date(),
    statement: 'Sign in to the x402 facilitator.',
  });
  const verified = await call('POST', '/v1/auth/verify', { json: { message, signature: await owner.signMessage({ message }) }, jar });
  expectStatus('POST /v1/auth/verify', verified, 200);
  step(`signed in as ${owner.address} (organization ${verified.body.organizationId})`);

  // 2. Payout wallet for test networks, and a test API key.
  const payout = privateKeyToAccount(generatePrivateKey()).address;
  const patched = await call('PATCH', '/v1/organization', { json: { payoutWalletTest: payout }, jar });
  expectStatus('PATCH /v1/organization', patched, 200);
  const key = await call<{ api_key: string }>('POST', '/v1/api_keys', { json: { name: 'smoke test', test_net: true }, jar });
  expectStatus('POST /v1/api_keys', key, 201);
  step(`payout wallet ${payout}; API key ${key.body.api_key.slice(0, 12)}...`);

  // 3. A demo buyer signs an EIP-3009 authorization to the facilitator, as an x402 v1 client does.
  const buyer = privateKeyToAccount(DEMO_BUYERS[0]!.privateKey);
  const chain = createPublicClient({ transport: http(network.rpcUrls[0]) });
  const balanceOf = (who: Address) => chain.readContract({ address: network.usdc!, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  const [buyerBefore, payoutBefore] = await Promise.all([balanceOf(buyer.address), balanceOf(payout)]);

  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: buyer.address,
    to: network.facilitator,
    value: AMOUNT.toString(),
    validAfter: (now - 600n).toString(),
    validBefore: (now + 300n).toString(),
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
  };
  const signature = await buyer.signTypedData(
    transferWithAuthorizationTypedData(
      { name: DEVNET_USDC_NAME, version: DEVNET_USDC_VERSION, chainId: network.chainId!, verifyingContract: network.usdc },
      authorization,
    ),
  );
  const body = {
    paymentPayload: { x402Version: 1, scheme: 'exact', network: network.id, payload: { signature, authorization } },
    paymentRequirements: {
      scheme: 'exact',
      network: network.id,
      maxAmountRequired: AMOUNT.toString(),
      resource: 'https://seller.example/weather',
      description: 'smoke test',
      mimeType: 'application/json',
      payTo: network.facilitator,
      maxTimeoutSeconds: 300,
      asset: network.usdc,
      extra: { name: DEVNET_USDC_NAME, version: DEVNET_USDC_VERSION },
    },
  };

  // 4. Settle.
  const settled = await call('POST', '/v1/settle', { json: body, bearer: key.body.api_key });
  step(`POST /v1/settle -> ${settled.status} in ${settled.ms} ms: ${JSON.stringify(settled.body)}`);
  expectStatus('POST /v1/settle', settled, 200);
  if (settled.body.success !== true) throw new SmokeError('settlement did not succeed');

  const receipt = await chain.getTransactionReceipt({ hash: settled.body.transaction });
  const [buyerAfter, payoutAfter] = await Promise.all([balanceOf(buyer.address), balanceOf(payout)]);
  const usd = (v: bigint) => `${formatUnits(v, 6)} USDC`;
  step(`transaction ${settled.body.transaction} on ${network.id}: ${receipt.status}, block ${receipt.blockNumber}`);
  step(`buyer  ${buyer.address}: ${usd(buyerBefore)} -> ${usd(buyerAfter)}`);
  step(`payout ${payout}: ${usd(payoutBefore)} -> ${usd(payoutAfter)}`);
  if (receipt.status !== 'success' || buyerAfter !== buyerBefore - AMOUNT || payoutAfter !== payoutBefore + AMOUNT) {
    throw new SmokeError('balances did not move by exactly 1 USDC');
  }
  step('smoke test passed');
}

main().catch((err) => {
  process.stderr.write(`smoke test FAILED: ${err instanceof SmokeError ? err.message : err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});

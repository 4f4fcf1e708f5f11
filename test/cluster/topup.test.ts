import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPublicClient, http, parseEventLogs, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { devnetAddresses } from '../../devnet/deploy';
import { DEMO_BUYERS } from '../../devnet/demo-accounts';
import { waitUntil } from '../../devnet/process';
import { DEVNET_MERCHANT_ADDRESS } from '../../src/chains/devnet-addresses';
import { DEVNET_BRIDGE_ATTESTATION_URL } from '../../src/config';
import { readClusterInfo, type ClusterInfo } from '../support/cluster';
import { request } from '../support/http';
import { opsCli } from '../support/ops-cli';
import { exactPayment } from '../support/payments';
import { merchantAbi } from '../../src/chains/evm/abi';

/**
 * A cross-chain top-up (optimism -> base) that ends in `needs_review` on `npm run cluster`, and its
 * operator resolution through `npm run ops` (a process, as an operator runs it) against the cluster's
 * Temporal server. The attester double runs inside the cluster launcher: its devnet control endpoint
 * makes it sign with another key (an attestation the transmitter refuses), then with the bridge's again.
 */
const TOPUPS = 'http://localhost:4022/v1/demo-merchant/topups';
const BASE = createPublicClient({ transport: http('http://127.0.0.1:8547') });
const { usdc, facilitator } = devnetAddresses();

let info: ClusterInfo;
const controls = (body: unknown) => request('PUT', `${DEVNET_BRIDGE_ATTESTATION_URL}/devnet/controls`, { json: body });
const ops = (...args: string[]) =>
  opsCli('127.0.0.1:7233', { PAYLOAD_CODEC_KEYS: readFileSync(join(info.dataDir, 'payload-codec-keys'), 'utf8').trim() })(...args);
async function depositedTo(buyer: Address): Promise<bigint[]> {
  const logs = await BASE.getLogs({ address: DEVNET_MERCHANT_ADDRESS, fromBlock: 0n, toBlock: 'latest' });
  return parseEventLogs({ abi: merchantAbi, logs, eventName: 'Deposited' })
    .filter((l) => l.args.buyer.toLowerCase() === buyer.toLowerCase())
    .map((l) => l.args.amount);
}

beforeAll(() => {
  info = readClusterInfo();
});

afterAll(async () => {
  await controls({ signWith: null });
});

test('the attester control refuses a malformed body and answers with what it set', async () => {
  expect(await controls({ signWith: '0x1234' })).toMatchObject({ status: 400 });
  expect(await controls({ held: false, other: 1 })).toMatchObject({ status: 400 });
  expect(await controls({ held: false })).toMatchObject({ status: 200, body: { held: false, signsWithConfiguredKey: true } });
});

test('a cross-chain top-up signed badly by the attester ends in needs_review; ops lists it and retry-deposit deposits its net once', async () => {
  const payer = privateKeyToAccount(DEMO_BUYERS[0]!.privateKey); // funded with USDC on the devnet optimism chain, where no other cluster test pays
  const body = await exactPayment({
    buyer: payer,
    network: 'optimism',
    chainId: 10,
    usdc,
    facilitator,
    value: 2_000_000n,
    extra: { name: 'USDC', version: '2', destinationChainId: 8453 },
  });
  const header = Buffer.from(JSON.stringify(body.paymentPayload)).toString('base64');
  expect(await depositedTo(payer.address)).toEqual([]);

  expect((await controls({ signWith: generatePrivateKey() })).body).toEqual({ held: false, signsWithConfiguredKey: false });
  const statuses: number[] = [];
  const final = await waitUntil(
    'needs_review',
    async () => {
      const res = await request('POST', TOPUPS, { json: {}, headers: { 'x-payment': header } });
      statuses.push(res.status);
      return res.status === 500 ? res : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  // Every answer before the final 500 (needs_review) was 503 (bridging).
  expect(statuses.filter((s) => s !== 503)).toEqual([500]);
  expect(final.body).toMatchObject({ state: 'needs_review', errorReason: 'needs_review', fillTx: null, depositTx: null });
  const id = final.body.topupId as string;

  // Visibility on PostgreSQL lags: ops list is polled until it shows the top-up.
  const codes: number[] = [];
  const listed = await waitUntil(
    'ops list to show the top-up',
    async () => {
      const r = await ops('list', '--kind', 'topup');
      codes.push(r.code);
      return r.out.includes(id) ? r : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  expect(codes.filter((c) => c !== 0)).toEqual([]);
  expect(listed.out).toMatch(new RegExp(`${id}\\ttopup\\tneeds_review\\toptimism\\t${payer.address.toLowerCase()}\\t`));

  expect((await controls({ signWith: null })).body).toEqual({ held: false, signsWithConfiguredKey: true });
  const retried = await ops('retry-deposit', '--workflow-id', id, '--operator', 'alice', '--reason', 'attester fixed (INC-7)');
  expect(retried.out).toContain(`${id} is needs_review; sending retry-deposit (operator alice: attester fixed (INC-7))`);
  expect(retried.out).toContain('done: {"state":"deposited"');
  expect(retried.code).toBe(0);

  const record = await request('GET', `${TOPUPS}/${id}`);
  expect(record.body).toMatchObject({ state: 'deposited', depositTx: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect(await depositedTo(payer.address)).toEqual([BigInt(record.body.netAmount as string)]);

  const again = await ops('retry-deposit', '--workflow-id', id, '--operator', 'alice', '--reason', 'again');
  expect(again.code).toBe(2);
  expect(await depositedTo(payer.address)).toHaveLength(1);
});

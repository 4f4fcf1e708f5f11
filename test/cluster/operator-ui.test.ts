import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import type { Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { devnetAddresses } from '../../devnet/deploy';
import { DEMO_BUYERS } from '../../devnet/demo-accounts';
import { repoRoot, waitUntil } from '../../devnet/process';
import { X402State } from '../../src/temporal/search-attributes';
import { stuckScanScheduleId } from '../../src/temporal/stuck-scan';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { API_1, connectClusterTemporal, newClusterSeller, readClusterInfo, type ClusterSeller } from '../support/cluster';
import { exactPayment } from '../support/payments';

/**
 * What an operator sees of a stuck payment in the cluster's Temporal UI (devnet/cluster.ts serves it
 * on TEMPORAL_UI_URL), driven in Debian's headless Chromium (scripts/ensure-chromium.sh installs it):
 * the `X402Stuck = true` filter lists it, and its page shows its state and its memo, which is sealed
 * in Temporal and readable only through the codec server. The screenshot is the README's.
 */
const UI = 'http://127.0.0.1:8233';
const BASE_SEPOLIA = { network: 'base-sepolia', chainId: 84532, rpcUrl: 'http://127.0.0.1:8545' };
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve(repoRoot(), process.env.TEST_ARTIFACTS_DIR ?? 'test-artifacts', 'cluster');

let temporal: Client;
let seller: ClusterSeller;
let browser: Browser;
const buyer = privateKeyToAccount(DEMO_BUYERS[2]!.privateKey);
const { usdc, facilitator } = devnetAddresses();

beforeAll(async () => {
  temporal = await connectClusterTemporal(readClusterInfo());
  seller = await newClusterSeller(privateKeyToAccount(generatePrivateKey()).address, API_1);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await temporal?.connection.close();
});

test('the UI lists the payment the X402Stuck = true filter finds, and its page shows its state and its sealed memo decoded', async () => {
  const body = await exactPayment({
    buyer,
    network: BASE_SEPOLIA.network,
    chainId: BASE_SEPOLIA.chainId,
    usdc,
    facilitator,
    value: 1_000_000n,
  });
  const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
  const workflowId = settleWorkflowId(BASE_SEPOLIA.network, buyer.address, nonce);
  const requestId = `ui-${nonce.slice(2, 14)}`;
  const handle = temporal.workflow.getHandle(workflowId);
  try {
    // Stuck: its transaction is out and not mined, so the scan flags it.
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_setAutomine', [false]);
    await waitUntil(
      'a pending answer with the transaction hash',
      async () => {
        const res = await seller.settle(API_1, body, { 'x-request-id': requestId });
        return res.status === 202 && res.body.transaction ? res : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    await waitUntil('X402State=submitted', async () => (await handle.describe()).typedSearchAttributes.get(X402State) === 'submitted', {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    await temporal.schedule.getHandle(stuckScanScheduleId('x402-settlement')).trigger();
    await waitUntil(
      'X402Stuck=true in visibility',
      async () => {
        for await (const wf of temporal.workflow.list({ query: `X402Stuck = true AND WorkflowId = '${workflowId}'` })) return wf;
        return undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    // The codec calls the page makes (through the cluster's stand-in for the operator's proxy).
    const decoded: number[] = [];
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.endsWith('/decode') && r.request().method() === 'POST') decoded.push(r.status());
    });
    // The Workflows page filtered as its filter bar writes it into the address.
    await page.goto(`${UI}/namespaces/default/workflows?query=${encodeURIComponent('X402Stuck = true')}`);
    const row = page.getByRole('link', { name: workflowId });
    await row.waitFor({ timeout: 60_000 });
    await row.click();
    await page.screenshot({ path: path.join(ARTIFACTS, 'operator-ui-workflow.png'), fullPage: false });

    // Its search attributes: the state, and the flag.
    await page.getByText('Search Attributes', { exact: true }).click({ timeout: 60_000 });
    await page.getByText('X402State').first().waitFor({ timeout: 30_000 });
    const attributes = await page.locator('main').innerText();
    expect(attributes).toMatch(/X402State[\s":]*submitted/);
    expect(attributes).toMatch(/X402Stuck[\s":]*true/);

    // Its memo: sealed in Temporal, shown in the clear once the codec server opened it.
    await page.getByText('Memo', { exact: true }).click();
    await page.getByText(requestId).first().waitFor({ timeout: 30_000 });
    expect(await page.locator('main').innerText()).toMatch(new RegExp(`"?requestId"?[\\s:]*"${requestId}"`));
    expect(decoded.length).toBeGreaterThan(0);
    expect(decoded.every((s) => s === 200)).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'operator-ui-stuck-payment.png'), fullPage: false });
    await page.goto(`${UI}/namespaces/default/workflows?query=${encodeURIComponent('X402Stuck = true')}`);
    await page.getByRole('link', { name: workflowId }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: path.join(ARTIFACTS, 'operator-ui-stuck-list.png'), fullPage: false });
    await page.close();

    // The payment then settles once as usual.
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_mine', []);
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_setAutomine', [true]);
    expect((await seller.settleUntilFinal(API_1, body)).status).toBe(200);
  } finally {
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
  }
});

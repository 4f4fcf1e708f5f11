import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Hex } from 'viem';
import { rpc } from '../../devnet/anvil';
import { startTemporalDevServer, type DevServer } from '../../temporal/dev-server';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { readStackInfo } from '../support/stack-info';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * The Temporal server killed (SIGKILL) and started again on its persisted state while 20 settlements
 * wait for their receipts (the chain does not mine meanwhile). The worker and the API reconnect by
 * themselves; each payment settles exactly once, with the hash it was first answered with.
 */
const N = 20;
const stack = readStackInfo();
const rpcUrl = stack.chains['base-sepolia'].rpcUrl;

describe('Temporal restarted under load', () => {
  let dir: string;
  let temporal: DevServer;
  let h: SettleHarness;

  beforeAll(async () => {
    dir = mkdtempSync(join(os.tmpdir(), 'temporal-restart-'));
    temporal = await startTemporalDevServer({ dbFile: join(dir, 'temporal.db'), uiPort: false, log: () => undefined });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    h = await startSettleHarness('sqlite', {
      relayerIndex: 1,
      temporal: client,
      env: { TEMPORAL_ADDRESS: temporal.address, SETTLE_WAIT_MS: '1500' },
    });
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
    await temporal?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test(`${N} settlements waiting for receipts when the server is SIGKILLed: each settles once, with its first hash`, async () => {
    const buyer = TEST_ACCOUNTS.buyers[2];
    const relayer = TEST_ACCOUNTS.relayers[1].address;
    const bodies = [];
    for (let i = 0; i < N; i++) bodies.push(await h.pay(buyer, { value: 1_000n + BigInt(i) }));
    const buyerBefore = await h.balanceOf(buyer.address);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    let hashes: Hex[];
    try {
      const pending = await Promise.all(bodies.map((b) => h.settleUntilBroadcast(b)));
      hashes = pending.map((p) => p.body.transaction as Hex);
      expect(pending.map((p) => p.status)).toEqual(Array(N).fill(202));
      // Every transaction is out and none is mined: all twenty wait for their receipts.
      const txs = await Promise.all(hashes.map((hash) => h.chain.getTransaction({ hash })));
      expect(txs.map((t) => t.blockNumber)).toEqual(Array(N).fill(null));

      // The server dies at once and comes back on its persisted state, at the same address.
      process.kill(temporal.pid, 'SIGKILL');
      await new Promise<void>((resolve) => {
        const check = () => {
          try {
            process.kill(temporal.pid, 0);
            setTimeout(check, 50);
          } catch {
            resolve();
          }
        };
        check();
      });
      const [host, port] = temporal.address.split(':');
      expect(host).toBe('127.0.0.1');
      temporal = await startTemporalDevServer({
        dbFile: join(dir, 'temporal.db'),
        port: Number(port),
        uiPort: false,
        log: () => undefined,
      });
      expect(temporal.address).toBe(`127.0.0.1:${port}`);
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }
    await rpc(rpcUrl, 'evm_mine', []);

    const finals = await Promise.all(bodies.map((b) => h.settleUntilFinal(b, 120_000)));
    expect(finals.map((f) => f.status)).toEqual(Array(N).fill(200));
    expect(finals.map((f) => f.body.transaction)).toEqual(hashes);
    for (const [i, b] of bodies.entries()) {
      const nonce = b.paymentPayload.payload.authorization.nonce as Hex;
      expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
      const result = await h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', buyer.address, nonce)).result();
      expect(result.response).toMatchObject({ success: true, transaction: hashes[i] });
    }
    expect(await h.chain.getTransactionCount({ address: relayer })).toBe(relayerNonceBefore + N);
    const paid = bodies.reduce((sum, _b, i) => sum + 1_000n + BigInt(i), 0n);
    expect(buyerBefore - (await h.balanceOf(buyer.address))).toBe(paid);
  });
});

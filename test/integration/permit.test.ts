import { randomBytes } from 'node:crypto';
import { EIP2612_PERMIT_TYPES } from '../support/evm';
import { createWalletClient, http, numberToHex, parseEventLogs, type Address, type Hex, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { permitSighash } from '../../src/permit/signature';
import { permitWorkflowId } from '../../src/temporal/workflow-ids';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../../src/temporal/search-attributes';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * POST /v1/permit on the real stack (Temporal dev server, anvil with our contracts, real DB, real
 * HTTP, a real worker process): every error code with its status and body, and the on-chain effect
 * of a good permit. The owner is buyers[4] and the relayer relayers[3], used by no other test file.
 */
const owner = TEST_ACCOUNTS.buyers[4];
const relayer = TEST_ACCOUNTS.relayers[3];
const stranger = privateKeyToAccount(generatePrivateKey());
const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;
const now = () => BigInt(Math.floor(Date.now() / 1000));
const PERMIT_TYPES = EIP2612_PERMIT_TYPES;

interface PermitOptions {
  owner?: LocalAccount;
  signer?: LocalAccount;
  value?: bigint;
  deadline?: bigint;
  /** The spender that is signed (default: the facilitator contract). */
  spender?: Address;
  /** Sign for this nonce instead of the owner's current one. */
  nonce?: bigint;
  recipient?: Address;
}

/** Helpers bound to one harness: signing permits as an EIP-2612 wallet does, and chain reads. */
function permitKit(get: () => SettleHarness) {
  const kit = {
    nonceOf: (who: Address) => get().chain.readContract({ address: get().stack.usdc, abi: tokenAbi, functionName: 'nonces', args: [who] }),
    allowanceOf: (who: Address) =>
      get().chain.readContract({
        address: get().stack.usdc,
        abi: tokenAbi,
        functionName: 'allowance',
        args: [who, get().stack.facilitator],
      }),
    relayerTxCount: () => get().chain.getTransactionCount({ address: relayer.address }),
    /** PermitTransfer events of the facilitator for (owner, recipient), over the whole chain. */
    async permitTransfers(from: Address, to: Address): Promise<bigint[]> {
      const logs = await get().chain.getLogs({ address: get().stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
      return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'PermitTransfer' })
        .filter((l) => l.args.owner.toLowerCase() === from.toLowerCase() && l.args.recipient.toLowerCase() === to.toLowerCase())
        .map((l) => l.args.value);
    },
    /** A signed permit and the v/r/s request body for it. */
    async sign(o: PermitOptions = {}) {
      const h = get();
      const who = o.owner ?? owner;
      const value = o.value ?? 1_000_000n;
      const deadline = o.deadline ?? now() + 600n;
      const nonce = o.nonce ?? (await kit.nonceOf(who.address));
      const signature = await (o.signer ?? who).signTypedData({
        domain: { name: 'USDC', version: '2', chainId: h.stack.chains['base-sepolia'].chainId, verifyingContract: h.stack.usdc },
        types: PERMIT_TYPES,
        primaryType: 'Permit',
        message: { owner: who.address, spender: o.spender ?? h.stack.facilitator, value, nonce, deadline },
      });
      const r = `0x${signature.slice(2, 66)}` as Hex;
      const s = `0x${signature.slice(66, 130)}` as Hex;
      const v = parseInt(signature.slice(130, 132), 16);
      const recipient = o.recipient ?? freshAddress();
      const body: Record<string, unknown> = {
        network: 'base-sepolia',
        tokenAddress: h.stack.usdc,
        owner: who.address,
        spender: h.stack.facilitator,
        value: value.toString(),
        deadline: deadline.toString(),
        v,
        r,
        s,
        recipient,
      };
      /** The same permit in the `signature` form. */
      const withSignature = (sig: Hex = signature) => {
        const { v: _v, r: _r, s: _s, ...rest } = body;
        return { ...rest, signature: sig };
      };
      return { body, signature, v, r, s, value, deadline, recipient, sighash: permitSighash(v, r, s), withSignature };
    },
  };
  return kit;
}

describe.each(oneDbKind('sqlite'))('POST /v1/permit (%s)', (kind) => {
  let h: SettleHarness;
  const kit = permitKit(() => h);

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 3 });
  });
  afterAll(async () => {
    await h?.close();
  });

  const permit = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${h.apiKey}` }) =>
    request('POST', `${h.api.baseUrl}/v1/permit`, { json: body, headers });
  const failed = (errorReason: string, network = 'base-sepolia') => ({
    success: false,
    errorReason,
    transaction: '',
    network,
    message: expect.any(String),
  });

  describe('a good permit', () => {
    test('v/r/s: 200, the tokens move once, the allowance is used, the nonce is spent, recorded; a repeat gets the same answer', async () => {
      const p = await kit.sign({ value: 2_500_000n });
      const [ownerBefore, nonceBefore, relayerTxs] = await Promise.all([
        h.balanceOf(owner.address),
        kit.nonceOf(owner.address),
        kit.relayerTxCount(),
      ]);

      const res = await permit(p.body);

      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia' });
      const receipt = await h.chain.getTransactionReceipt({ hash: res.body.transaction });
      expect(receipt.status).toBe('success');
      expect(receipt.from.toLowerCase()).toBe(relayer.address.toLowerCase()); // the service signer paid the gas
      expect(receipt.to?.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
      expect(await h.balanceOf(owner.address)).toBe(ownerBefore - 2_500_000n);
      expect(await h.balanceOf(p.recipient)).toBe(2_500_000n);
      expect(await kit.nonceOf(owner.address)).toBe(nonceBefore + 1n);
      expect(await kit.allowanceOf(owner.address)).toBe(0n); // the permit's allowance was spent by the transfer
      expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([2_500_000n]);
      expect(await kit.relayerTxCount()).toBe(relayerTxs + 1);

      const id = permitWorkflowId('base-sepolia', h.stack.usdc, owner.address, p.sighash);
      // 200 came once the transaction was sent; the workflow records the receipt just after.
      const row = await waitUntil(
        'the permit to be recorded as executed',
        async () => {
          const found = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id });
          return found.state === 'executed' ? found : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(row).toMatchObject({
        route: 'permit',
        network: 'base-sepolia',
        payer: owner.address.toLowerCase(),
        recipient: p.recipient.toLowerCase(),
        amount: '2500000',
        transaction: res.body.transaction,
        state: 'executed',
        errorReason: null,
      });
      expect(JSON.parse(row.response!)).toEqual(res.body);
      const attrs = (await h.temporal.workflow.getHandle(id).describe()).typedSearchAttributes;
      expect([X402Kind, X402Network, X402Payer, X402State, X402Organization].map((k) => attrs.get(k))).toEqual([
        'permit',
        'base-sepolia',
        owner.address.toLowerCase(),
        'executed',
        row.organizationId,
      ]);

      const again = await permit(p.body);
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: res.body });
      expect(await kit.permitTransfers(owner.address, p.recipient)).toHaveLength(1);
      expect(await h.balanceOf(owner.address)).toBe(ownerBefore - 2_500_000n);
    });

    test('the 65-byte signature form with numeric value and deadline works, and is the same permit as its v/r/s spelling', async () => {
      const p = await kit.sign({ value: 700_000n });
      const body = { ...p.withSignature(), value: 700_000, deadline: Number(p.deadline) };
      const ownerBefore = await h.balanceOf(owner.address);

      const res = await permit(body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia' });

      // v/r/s with r and s written without 0x: the same signature, so the same workflow and answer.
      const spelled = { ...p.body, r: p.r.slice(2), s: p.s.slice(2).toUpperCase() };
      const again = await permit(spelled);
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: res.body });
      expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([700_000n]);
      expect(await h.balanceOf(owner.address)).toBe(ownerBefore - 700_000n);
    });

    test('a signature whose last byte is the y parity (0/1) works', async () => {
      const p = await kit.sign({ value: 3n });
      const parity = `${p.signature.slice(0, 130)}${numberToHex(p.v - 27, { size: 1 }).slice(2)}` as Hex;
      const res = await permit(p.withSignature(parity));
      expect(res.status).toBe(200);
      expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([3n]);
    });

    test('the session cookie is accepted instead of an API key; a bad Authorization header never falls back to it', async () => {
      const p = await kit.sign({ value: 11n });
      const bad = await permit(p.body, { cookie: h.cookie, authorization: 'Bearer nope' });
      expect({ status: bad.status, body: bad.body }).toEqual({
        status: 401,
        body: { type: 'api_error', code: 401, message: expect.any(String) },
      });
      const res = await permit(p.body, { cookie: h.cookie });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([11n]);
    });

    test('20 concurrent identical requests: exactly one transfer and identical answers', async () => {
      const p = await kit.sign({ value: 123_456n });
      const nonceBefore = await kit.nonceOf(owner.address);
      const replies = await Promise.all(Array.from({ length: 20 }, () => permit(p.body)));
      expect(new Set(replies.map((r) => r.status))).toEqual(new Set([200]));
      expect(new Set(replies.map((r) => JSON.stringify(r.body))).size).toBe(1);
      expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([123_456n]);
      expect(await kit.nonceOf(owner.address)).toBe(nonceBefore + 1n);
    });
  });

  test('permit replies are counted in x402_settlements_total with route permit', async () => {
    const res = await request('GET', `${h.api.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/^x402_settlements_total\{route="permit",network="base-sepolia",outcome="success"\} [1-9]\d*$/m);
  });

  describe('errors: exact status and body, nothing sent, no money moved', () => {
    /** Sends the body, checks the answer, and that neither the owner's balance nor the relayer moved. */
    async function expectRejected(body: unknown, status: number, expected: object, message?: string | RegExp) {
      const [before, txs] = await Promise.all([h.balanceOf(owner.address), kit.relayerTxCount()]);
      const res = await permit(body);
      expect({ status: res.status, body: res.body }).toEqual({ status, body: expected });
      if (message !== undefined) expect(res.body.message).toMatch(message);
      expect(await h.balanceOf(owner.address)).toBe(before);
      expect(await kit.relayerTxCount()).toBe(txs);
      return res;
    }

    test.each([
      ['a missing recipient', (b: Record<string, unknown>) => ({ ...b, recipient: undefined }), /recipient: is required/],
      [
        'a malformed owner',
        (b: Record<string, unknown>) => ({ ...b, owner: '0x1234' }),
        /owner: must be a 0x-prefixed 20-byte hex address/,
      ],
      ['a value that is not a whole number', (b: Record<string, unknown>) => ({ ...b, value: '1.5' }), /value: must match/],
      ['v 300', (b: Record<string, unknown>) => ({ ...b, v: 300 }), /v: must be/],
      ['both v/r/s and signature', (b: Record<string, unknown>) => ({ ...b, signature: `0x${'11'.repeat(65)}` }), /not both/],
      ['no signature at all', (b: Record<string, unknown>) => ({ ...b, v: 0, r: undefined, s: undefined }), /a signature is required/],
      [
        'a 64-byte signature',
        (b: Record<string, unknown>) => ({ ...b, v: undefined, r: undefined, s: undefined, signature: `0x${'11'.repeat(64)}` }),
        /65 bytes/,
      ],
    ])('%s -> 400 invalid_request', async (_, patch, message) => {
      const p = await kit.sign();
      await expectRejected(patch(p.body), 400, failed('invalid_request'), message);
    });

    test('an expired deadline -> 500 permit_execution_failed (the spec: a bad permit), refused before anything is sent', async () => {
      const p = await kit.sign({ deadline: now() - 60n });
      await expectRejected(p.body, 500, failed('permit_execution_failed'), /deadline \d+ has passed/);
    });

    test('a missing network -> 400 invalid_request with network ""', async () => {
      const p = await kit.sign();
      await expectRejected({ ...p.body, network: undefined }, 400, failed('invalid_request', ''), /network: is required/);
    });

    test('malformed JSON and a non-object body -> 400 invalid_request with network ""', async () => {
      const raw = (body: string) =>
        request('POST', `${h.api.baseUrl}/v1/permit`, {
          body,
          headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' },
        });
      const res = await raw('{"network": "base-sepolia", ');
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: failed('invalid_request', '') });
      const arr = await raw('[]');
      expect({ status: arr.status, body: arr.body }).toEqual({ status: 400, body: failed('invalid_request', '') });
    });

    test.each(['solana', 'atlantis', 'eip155:84532'])('network %s -> 400 unsupported_network', async (network) => {
      const p = await kit.sign();
      await expectRejected({ ...p.body, network }, 400, failed('unsupported_network', network));
    });

    test.each(['arc-testnet', 'fluent-testnet'])(
      'network %s (known, not configured here) -> 400 network_not_configured',
      async (network) => {
        const p = await kit.sign();
        await expectRejected({ ...p.body, network }, 400, failed('network_not_configured', network));
      },
    );

    test('v other than 27/28 -> 400 invalid_signature', async () => {
      const p = await kit.sign();
      await expectRejected({ ...p.body, v: 29 }, 400, failed('invalid_signature'), 'v must be 27 or 28, got 29');
      await expectRejected(p.withSignature(`${p.signature.slice(0, 130)}1d` as Hex), 400, failed('invalid_signature'), /recovery byte/);
    });

    test('v 0 with r and s (v missing) -> 400 invalid_signature', async () => {
      const p = await kit.sign();
      await expectRejected({ ...p.body, v: 0 }, 400, failed('invalid_signature'), /v, r and s are needed together/);
    });

    test('signed by someone else, or for a stale nonce -> 500 permit_execution_failed (a bad permit), nothing sent', async () => {
      await expectRejected((await kit.sign({ signer: stranger })).body, 500, failed('permit_execution_failed'), /not the owner's permit/);
      const nonce = await kit.nonceOf(owner.address);
      await expectRejected(
        (await kit.sign({ nonce: nonce + 1n })).body,
        500,
        failed('permit_execution_failed'),
        new RegExp(`current nonce ${nonce}`),
      );
    });

    test('signed for a spender other than the facilitator -> 500 permit_execution_failed naming the facilitator', async () => {
      const other = freshAddress();
      const p = await kit.sign({ spender: other });
      await expectRejected(
        { ...p.body, spender: other },
        500,
        failed('permit_execution_failed'),
        /spender must be the facilitator contract/,
      );
    });

    test('a used permit repeated for another recipient -> 500 permit_execution_failed; the first transfer stands', async () => {
      const p = await kit.sign({ value: 5n });
      expect((await permit(p.body)).status).toBe(200);
      const elsewhere = freshAddress();
      await expectRejected({ ...p.body, recipient: elsewhere }, 500, failed('permit_execution_failed'), /already used/);
      expect(await h.balanceOf(elsewhere)).toBe(0n);
      expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([5n]);
    });

    test('tokenAddress omitted -> 500 permit_execution_failed with a clear message', async () => {
      const p = await kit.sign();
      await expectRejected({ ...p.body, tokenAddress: undefined }, 500, failed('permit_execution_failed'), /^tokenAddress is required/);
    });

    test('a tokenAddress the network does not list (no code, or any other contract) -> 400 invalid_request, nothing sent', async () => {
      // We call only tokens we list (issue 39): an attacker's token would run its code on our gas.
      const p = await kit.sign();
      for (const token of [freshAddress(), h.stack.facilitator]) {
        await expectRejected({ ...p.body, tokenAddress: token }, 400, failed('invalid_request'), /is not a token this service settles/);
      }
    });

    test('a transfer that would revert (owner without funds) -> 500 permit_execution_failed, nothing signed', async () => {
      const poor = privateKeyToAccount(generatePrivateKey());
      const p = await kit.sign({ owner: poor, value: 10n });
      const res = await expectRejected(
        p.body,
        500,
        failed('permit_execution_failed'),
        /would revert: ERC20: transfer amount exceeds balance/,
      );
      const id = permitWorkflowId('base-sepolia', h.stack.usdc, poor.address, p.sighash);
      expect(await h.tdb.db.em.fork().findOne(RelayerTransaction, { id: { $like: `${id}%` } })).toBeNull();
      const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id });
      expect(row).toMatchObject({ state: 'rejected', errorReason: 'permit_execution_failed', transaction: null });
      expect(JSON.parse(row.response!)).toEqual(res.body);
    });

    test('a permit rejected before sending can run again once the problem is fixed', async () => {
      const poor = privateKeyToAccount(generatePrivateKey());
      const p = await kit.sign({ owner: poor, value: 10n });
      expect((await permit(p.body)).status).toBe(500);
      // Fund the owner; the very same permit then executes.
      const wallet = createWalletClient({ account: owner, transport: http(h.stack.chains['base-sepolia'].rpcUrl) });
      const hash = await wallet.writeContract({
        chain: null,
        address: h.stack.usdc,
        abi: tokenAbi,
        functionName: 'transfer',
        args: [poor.address, 10n],
      });
      await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      const res = await permit(p.body);
      expect(res.status).toBe(200);
      expect(await kit.permitTransfers(poor.address, p.recipient)).toEqual([10n]);
    });

    describe('authentication (generic envelope)', () => {
      test('no credentials -> 401', async () => {
        const res = await permit((await kit.sign()).body, {});
        expect({ status: res.status, body: res.body }).toEqual({
          status: 401,
          body: { type: 'api_error', code: 401, message: expect.any(String) },
        });
      });

      test('a test key on a mainnet and a live key on a testnet -> 403', async () => {
        const p = await kit.sign();
        const onMainnet = await permit({ ...p.body, network: 'base' });
        expect({ status: onMainnet.status, body: onMainnet.body }).toEqual({
          status: 403,
          body: { type: 'api_error', code: 403, message: 'test keys settle testnets only' },
        });
        const live = await request('POST', `${h.api.baseUrl}/v1/api_keys`, { cookie: h.cookie, json: { name: 'live', test_net: false } });
        const res = await permit(p.body, { authorization: `Bearer ${live.body.api_key}` });
        expect({ status: res.status, body: res.body }).toEqual({
          status: 403,
          body: { type: 'api_error', code: 403, message: 'live keys settle mainnets only' },
        });
      });

      test('a session on a mainnet that is not enabled -> 400 network_not_configured', async () => {
        const p = await kit.sign();
        const res = await permit({ ...p.body, network: 'base' }, { cookie: h.cookie });
        expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: failed('network_not_configured', 'base') });
      });
    });
  });
});

/**
 * The worker is killed (SIGKILL) after it recorded and broadcast the transaction, while the chain is
 * not mining; a new worker finishes the workflow. Exactly one transferWithPermit happens.
 */
describe.each(oneDbKind('sqlite'))('permit durability (%s)', (kind) => {
  let h: SettleHarness;
  const kit = permitKit(() => h);
  let rpcUrl: string;

  beforeAll(async () => {
    // A short wait, so a request whose transaction is not yet signed answers permit_pending.
    h = await startSettleHarness(kind, { relayerIndex: 3, env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' } });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  const permit = (body: unknown) =>
    request('POST', `${h.api.baseUrl}/v1/permit`, { json: body, headers: { authorization: `Bearer ${h.apiKey}` } });

  /** SIGKILL for the worker process, then a new one; the old one must really be gone. */
  async function killWorkerHard() {
    const victim = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(victim, 0)).toThrow();
  }

  test('worker killed after broadcasting: one transaction, one transfer, nonce +1, the same final answer', async () => {
    const value = 4_000_000n + BigInt(randomBytes(2).readUInt16BE());
    const p = await kit.sign({ value });
    const workflowId = permitWorkflowId('base-sepolia', h.stack.usdc, owner.address, p.sighash);
    const [ownerBefore, nonceBefore, relayerNonceBefore] = await Promise.all([
      h.balanceOf(owner.address),
      kit.nonceOf(owner.address),
      kit.relayerTxCount(),
    ]);

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    // The spec's 200 means submitted: the answer comes once the transaction is sent, before it is mined.
    // Repeats attach to the same workflow; a loaded machine may need one before the transaction is sent.
    const submitted = await waitUntil(
      'an answer other than permit_pending',
      async () => {
        const res = await permit(p.body);
        return res.status === 202 && res.body.transaction === '' ? undefined : res;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect({ status: submitted.status, body: submitted.body }).toEqual({
      status: 200,
      body: { success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia' },
    });
    const hash = submitted.body.transaction as Hex;
    expect((await h.chain.getTransaction({ hash })).blockNumber).toBeNull(); // in the mempool, not mined
    expect(await h.balanceOf(p.recipient)).toBe(0n);

    await killWorkerHard();
    const repeat = await permit(p.body);
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: submitted.body });

    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    // The new worker finishes the workflow: the record reaches its outcome, and the request answers it.
    await waitUntil(
      'the permit to be recorded as executed',
      async () => ((await h.tdb.db.em.fork().findOne(Settlement, { id: workflowId }))?.state === 'executed' ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    const final = await permit(p.body);
    expect(final.status).toBe(200);

    expect(final.body).toEqual({ success: true, transaction: hash, network: 'base-sepolia' });
    expect(await kit.nonceOf(owner.address)).toBe(nonceBefore + 1n);
    expect(await h.balanceOf(p.recipient)).toBe(value);
    expect(await h.balanceOf(owner.address)).toBe(ownerBefore - value);
    expect(await kit.permitTransfers(owner.address, p.recipient)).toEqual([value]);
    expect(await kit.allowanceOf(owner.address)).toBe(0n);
    expect(await kit.relayerTxCount()).toBe(relayerNonceBefore + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}%` } });
    expect(recorded.map((r) => ({ hash: r.hash, status: r.status }))).toEqual([{ hash, status: 'mined' }]);
  });
});

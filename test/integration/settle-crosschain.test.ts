import {
  BaseError,
  ContractFunctionRevertedError,
  concat,
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  numberToHex,
  pad,
  parseEventLogs,
  recoverAddress,
  sliceHex,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { CCTPV2BridgingProvider } from '@circle-fin/provider-cctp-v2';
import { rpc } from '../../devnet/anvil';
import type { BridgeAttester } from '../../devnet/bridge-attester';
import { startStackAttester } from '../support/stack-info';
import { getContract } from '../../devnet/contracts';
import { waitUntil } from '../../devnet/process';
import {
  DEVNET_BRIDGE_ATTESTER_ADDRESSES,
  DEVNET_BRIDGE_ATTESTER_KEYS,
  DEVNET_BRIDGE_FEE_COLLECTOR,
  DEVNET_BRIDGE_MESSENGER_ADDRESS,
  DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { CCTP_FINALITY_FAST, CCTP_FINALITY_FINALIZED, decodeBurnMessage } from '../../src/chains/evm/bridge';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { fundUsdc } from '../support/evm';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { facilitatorAbi, messageTransmitterV2Abi, tokenAbi, tokenMessengerV2Abi } from '../../src/chains/evm/abi';

/**
 * Cross-chain EIP-3009 (spec "POST /v1/settle" routing step 4, destination differs): a buyer signs
 * on base-sepolia for the seller's optimism-sepolia payout. The settle response carries the source
 * transaction as soon as it succeeded, while the attestation is still withheld by the attester
 * double; the mint and payout follow on the destination, exactly once, also across a worker SIGKILL.
 */
const OPTIMISM_SEPOLIA = 11155420;
const VALUE = 2_000_000n;
const BRIDGE_FEE = 0n; // the attester double's feeExecuted of a standard transfer: none, as Circle's
const PLATFORM_FEE = 20_000n; // the organization's 100 bps of the signed value
const PAYOUT = VALUE - BRIDGE_FEE - PLATFORM_FEE;

describe.each(oneDbKind('postgres'))('cross-chain settlement (%s)', (kind) => {
  let h: SettleHarness;
  let attester: BridgeAttester;
  let dest: PublicClient;
  const buyer = TEST_ACCOUNTS.buyers[4];
  const relayer = TEST_ACCOUNTS.relayers[3];

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    // This file's own attester double, so it can withhold attestations (the stack's one never does).
    attester = await startStackAttester({
      held: true,
    });
    h = await startSettleHarness(kind, {
      relayerIndex: 3,
      platformFeeBps: 100,
      env: { BRIDGE_ATTESTATION_URL: attester.url, SETTLE_WAIT_MS: '5000' },
    });
    dest = createPublicClient({ transport: http(stack.chains['optimism-sepolia'].rpcUrl) });
  });
  afterAll(async () => {
    await rpc(h.stack.chains['optimism-sepolia'].rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
    await attester?.stop();
  });
  beforeEach(() => attester.hold());

  const pay = (extra: Record<string, unknown> = { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA }) =>
    h.pay(buyer, { value: VALUE, extra });
  const destBalance = (who: Address) => dest.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  /** Messages from base-sepolia (domain 6) received by the destination's MessageTransmitterV2 after block `after`, by nonce if given. */
  const mints = async (nonce?: string | null, after = -1n) => {
    const logs = await dest.getLogs({ address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: messageTransmitterV2Abi, logs, eventName: 'MessageReceived' }).filter(
      (l) => l.args.sourceDomain === 6 && l.blockNumber > after && (nonce === undefined || l.args.nonce === nonce),
    );
  };
  const payouts = async (nonce: string | null | undefined) => {
    const logs = await dest.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgePayout' }).filter(
      (l) => l.args.sourceDomain === 6 && l.args.bridgeNonce === nonce,
    );
  };
  /** The CCTP V2 burn message the source transaction emitted (through the source MessageTransmitterV2). */
  const burnOf = async (hash: Hex) => {
    const receipt = await h.chain.getTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    const [sent] = parseEventLogs({ abi: messageTransmitterV2Abi, logs: receipt.logs, eventName: 'MessageSent' }).filter(
      (l) => l.address.toLowerCase() === DEVNET_BRIDGE_TRANSMITTER_ADDRESS.toLowerCase(),
    );
    return decodeBurnMessage(sent!.args.message);
  };
  const NONCE = /^0x[0-9a-f]{64}$/;
  const bridgeRow = (settlementId: string) => h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId });
  const delivered = (settlementId: string) =>
    waitUntil(
      'the bridge leg to be delivered',
      async () => {
        const row = await bridgeRow(settlementId);
        return row?.state === 'delivered' ? row : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

  test('answers with the source transaction before the mint, then mints and pays out exactly once', async () => {
    const destStart = await dest.getBlockNumber({ cacheTime: 0 }); // deliveries after this block are this test's
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const [buyerBefore, payoutBefore, feeBefore, bridgeFeeBefore] = await Promise.all([
      h.balanceOf(buyer.address),
      destBalance(h.payout),
      destBalance(h.feeRecipient),
      destBalance(DEVNET_BRIDGE_FEE_COLLECTOR),
    ]);

    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const hash = res.body.transaction as Hex;

    // The source transaction pulled the buyer's authorization and burned it toward domain 2, through
    // TokenMessengerV2.depositForBurn: a CCTP V2 message, its nonce left for the attestation service.
    const burn = await burnOf(hash);
    expect(burn).toMatchObject({
      version: 1,
      sourceDomain: 6,
      destinationDomain: 2,
      nonce: `0x${'00'.repeat(32)}`,
      minFinalityThreshold: CCTP_FINALITY_FINALIZED,
      finalityThresholdExecuted: 0,
      body: { version: 1, amount: VALUE, maxFee: 20_000n, feeExecuted: 0n, hookData: '0x' },
    });
    expect(burn.body.mintRecipient.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(burn.destinationCaller.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(burn.body.messageSender.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VALUE);
    // Early return: nothing has reached the destination yet (the attestation is withheld).
    expect(await mints(undefined, destStart)).toHaveLength(0);
    expect(await destBalance(h.payout)).toBe(payoutBefore);
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: workflowId });
    expect({ route: row.route, state: row.state, transaction: row.transaction }).toEqual({
      route: 'eip3009-crosschain',
      state: 'bridging',
      transaction: hash,
    });

    // A repeat while bridging answers the same.
    const repeat = await h.settle(body);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(res.body);

    attester.release();
    const transfer = await delivered(workflowId);
    expect(transfer).toMatchObject({
      sourceNetwork: 'base-sepolia',
      destinationNetwork: 'optimism-sepolia',
      sourceDomain: 6,
      destinationDomain: 2,
      bridgeNonce: expect.stringMatching(NONCE),
      sourceTx: hash,
      amount: VALUE.toString(),
      received: (VALUE - BRIDGE_FEE).toString(),
      bridgeFee: BRIDGE_FEE.toString(),
      fee: PLATFORM_FEE.toString(),
      payoutAmount: PAYOUT.toString(),
      recipient: h.payout.toLowerCase(),
    });
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
    expect(await payouts(transfer.bridgeNonce)).toHaveLength(1);
    const mintReceipt = await dest.getTransactionReceipt({ hash: transfer.mintTx as Hex });
    expect(mintReceipt.status).toBe('success');
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    expect(await destBalance(h.feeRecipient)).toBe(feeBefore + PLATFORM_FEE);
    expect(await destBalance(DEVNET_BRIDGE_FEE_COLLECTOR)).toBe(bridgeFeeBefore + BRIDGE_FEE);
    expect(await destBalance(h.stack.facilitator)).toBe(0n); // nothing left behind on the destination

    await waitUntil(
      'the settlement to be final',
      async () => (await h.tdb.db.em.fork().findOne(Settlement, { id: workflowId }))?.state === 'settled',
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    const after = await h.settle(body);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(res.body);
  });

  test('concurrent duplicates attach to one workflow: one burn, one mint, the same answer for all', async () => {
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const buyerBefore = await h.balanceOf(buyer.address);

    const answers = await Promise.all([0, 1, 2].map(() => h.settle(body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(answers[2]!.body).toEqual(answers[0]!.body);
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    expect(parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgeBurned' }).filter((l) => l.args.nonce === nonce)).toHaveLength(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VALUE);

    attester.release();
    const transfer = await delivered(workflowId);
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
  });

  test("the stack's attester double answers in the Iris v2 shape, signed by two devnet attesters in signer order", async () => {
    const base = h.stack.bridgeAttestationUrl!;
    const body = await pay();
    attester.release(); // this file's double; the stack's one below never withholds
    const res = await h.settle(body);
    const hash = res.body.transaction as Hex;
    const burn = await burnOf(hash);
    const get = async (path: string) => {
      const r = await fetch(`${base}${path}`);
      return { status: r.status, body: (await r.json()) as any };
    };
    const ok = await get(`/v2/messages/6?transactionHash=${hash}`);
    expect(ok.status).toBe(200);
    expect(ok.body.messages).toHaveLength(1);
    const [m] = ok.body.messages;
    expect(m).toMatchObject({
      eventNonce: expect.stringMatching(NONCE),
      cctpVersion: 2,
      status: 'complete',
      attestation: expect.stringMatching(/^0x[0-9a-f]{260}$/), // 2 (the transmitters' threshold) x 65 bytes
    });
    // The message as the service completes it: nonce assigned, finality executed, fee executed.
    expect(decodeBurnMessage(m.message)).toEqual({
      ...burn,
      nonce: m.eventNonce,
      finalityThresholdExecuted: CCTP_FINALITY_FINALIZED,
      body: { ...burn.body, feeExecuted: BRIDGE_FEE },
    });
    expect(m.decodedMessage).toMatchObject({
      nonce: m.eventNonce,
      decodedMessageBody: { amount: VALUE.toString(), feeExecuted: BRIDGE_FEE.toString() },
    });
    const signers = await Promise.all(
      [0, 1].map((i) => recoverAddress({ hash: keccak256(m.message), signature: sliceHex(m.attestation, i * 65, (i + 1) * 65) })),
    );
    const expected = DEVNET_BRIDGE_ATTESTER_ADDRESSES.slice(0, 2);
    expect([...signers].sort()).toEqual([...expected].sort()); // the first two devnet attesters
    expect(BigInt(signers[0]!)).toBeLessThan(BigInt(signers[1]!)); // in increasing address order
    expect(await get(`/v2/messages/6?transactionHash=0x${'00'.repeat(32)}`)).toEqual({
      status: 404,
      body: { error: 'Message hash not found' },
    });
    expect(await get(`/v2/messages/6?transactionHash=0x1234`)).toEqual({ status: 400, body: { error: 'invalid transactionHash' } });
    expect(await get(`/v2/messages/99?transactionHash=${hash}`)).toEqual({ status: 400, body: { error: 'unsupported source domain 99' } });
    await delivered(settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce));
  });

  test("Circle's CCTP V2 client (@circle-fin/provider-cctp-v2) reads this double: pending, then the 2-of-n attestation, and the fast fee", async () => {
    const body = await pay(); // this file's double withholds the attestation (beforeEach)
    const res = await h.settle(body);
    expect(res.status).toBe(200);
    const hash = res.body.transaction as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce);
    // Circle's chain definitions, with the devnet's contracts (the client reads only domain, testnet flag and USDC here).
    const chain = (name: string, chainId: number, domain: number) => ({
      type: 'evm',
      chain: name.replace(' ', '_'),
      name,
      chainId,
      isTestnet: true,
      usdcAddress: h.stack.usdc,
      eurcAddress: null,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      explorerUrl: 'http://127.0.0.1/tx/{hash}',
      rpcEndpoints: [h.stack.chains['base-sepolia'].rpcUrl],
      cctp: {
        domain,
        contracts: {
          v2: {
            type: 'split',
            tokenMessenger: DEVNET_BRIDGE_MESSENGER_ADDRESS,
            messageTransmitter: DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
            confirmations: 1,
            fastConfirmations: 1,
          },
        },
      },
    });
    // A wallet adapter is required by the client's parameter checks; reading the API signs and sends nothing.
    const adapter = {
      prepare: () => Promise.reject(new Error('not used')),
      waitForTransaction: () => Promise.reject(new Error('not used')),
      validateChainSupport: () => undefined,
    };
    const source = { adapter, address: buyer.address, chain: chain('Base Sepolia', 84532, 6) };
    const destination = { adapter, address: buyer.address, chain: chain('Optimism Sepolia', 11155420, 2) };
    const provider = new CCTPV2BridgingProvider();
    // The client knows only Circle's hosts (testnet chains: the sandbox): its requests go to this file's double instead.
    const IRIS_SANDBOX = 'https://iris-api-sandbox.circle.com';
    const realFetch = globalThis.fetch;
    const asked: string[] = [];
    globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
      asked.push(String(input));
      return realFetch(String(input).replace(IRIS_SANDBOX, attester.url), init);
    };
    try {
      await expect(provider.fetchAttestation(source as never, hash, { maxRetries: 2, retryDelay: 10 })).rejects.toThrow(
        'Failed to fetch attestation: Maximum retry attempts (2) exceeded: Attestation not ready',
      );
      attester.release();
      const m = await provider.fetchAttestation(source as never, hash, { maxRetries: 5, retryDelay: 100 });
      // The API runs in this process too: its own requests (RPC) are not the client's.
      const circle = () => asked.filter((u) => u.startsWith(IRIS_SANDBOX));
      expect(circle()[0]).toBe(`${IRIS_SANDBOX}/v2/messages/6?transactionHash=${hash}`);
      expect(m).toMatchObject({
        status: 'complete',
        cctpVersion: 2,
        delayReason: null,
        eventNonce: expect.stringMatching(NONCE),
        attestation: expect.stringMatching(/^0x[0-9a-f]{260}$/),
      });
      expect(decodeBurnMessage(m.message as Hex)).toMatchObject({ nonce: m.eventNonce, sourceDomain: 6, destinationDomain: 2 });
      expect(m.decodedMessage.decodedMessageBody).toMatchObject({ amount: VALUE.toString(), feeExecuted: BRIDGE_FEE.toString() });

      // A fast transfer's maxFee as Circle's client computes it from the fee endpoint: the fast tier's
      // 10 bps of 2 USDC (2,000) plus its 10% buffer.
      const fees = await provider.getMaxFee({
        source,
        destination,
        amount: VALUE.toString(),
        token: 'USDC',
        config: { transferSpeed: 'FAST' },
      } as never);
      expect(circle().at(-1)).toBe(`${IRIS_SANDBOX}/v2/burn/USDC/fees/6/2`);
      expect(fees).toEqual({ providerFee: 2_200n, forwarderFee: 0n });
    } finally {
      globalThis.fetch = realFetch;
    }
    await delivered(workflowId);
  });

  test('the destination transmitter takes only its threshold (2) of enabled attesters in signer order, and mints once', async () => {
    // A burn of our own through TokenMessengerV2 (any caller may deliver it), base-sepolia to optimism-sepolia.
    const [src, dst] = [h.stack.chains['base-sepolia'], h.stack.chains['optimism-sepolia']];
    const chainOf = (c: { rpcUrl: string; chainId: number }) => ({
      id: c.chainId,
      name: `devnet-${c.chainId}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [c.rpcUrl] } },
    });
    const [burner, caller, recipient] = [0, 1, 2].map(() => privateKeyToAccount(generatePrivateKey()));
    await rpc(src.rpcUrl, 'anvil_setBalance', [burner!.address, numberToHex(10n ** 18n)]);
    await rpc(dst.rpcUrl, 'anvil_setBalance', [caller!.address, numberToHex(10n ** 18n)]);
    const amount = 1_000_000n;
    await fundUsdc(src, h.stack.usdc, burner!.address, amount);
    const source = createWalletClient({ account: burner!, chain: chainOf(src), transport: http(src.rpcUrl) });
    const approve = await source.writeContract({
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'approve',
      args: [DEVNET_BRIDGE_MESSENGER_ADDRESS, amount],
    });
    await h.chain.waitForTransactionReceipt({ hash: approve });
    const burnTx = await source.writeContract({
      address: DEVNET_BRIDGE_MESSENGER_ADDRESS,
      abi: tokenMessengerV2Abi,
      functionName: 'depositForBurn',
      args: [amount, 2, pad(recipient!.address), h.stack.usdc, pad('0x'), 5_000n, CCTP_FINALITY_FAST], // fast: the fee is charged
    });
    expect((await h.chain.waitForTransactionReceipt({ hash: burnTx })).status).toBe('success');

    // The attestation of that burn as this file's double signs it with `keys` (its message is the same each time).
    attester.release();
    const attested = async (keys?: Hex[]) => {
      attester.attestWith(keys);
      const r = await fetch(`${attester.url}/v2/messages/6?transactionHash=${burnTx}`);
      const [m] = ((await r.json()) as { messages: { message: Hex; attestation: Hex; status: string }[] }).messages;
      expect(m!.status).toBe('complete');
      return m!;
    };
    const [k0, k1, k2] = DEVNET_BRIDGE_ATTESTER_KEYS;
    const { message, attestation: twoOfThree } = await attested([k1, k2]); // not the double's default pair
    const transmitter = { address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS, abi: getContract('BridgeMessageTransmitter').abi } as const;
    const revertOf = async (attestation: Hex) => {
      try {
        await dest.simulateContract({
          ...transmitter,
          account: caller!.address,
          functionName: 'receiveMessage',
          args: [message, attestation],
        });
        return 'accepted';
      } catch (err) {
        const reverted = (err as BaseError).walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
        return { error: reverted?.data?.errorName, args: reverted?.data?.args };
      }
    };
    try {
      const [first, second] = [sliceHex(twoOfThree, 0, 65), sliceHex(twoOfThree, 65, 130)];
      const signers = await Promise.all([first, second].map((signature) => recoverAddress({ hash: keccak256(message), signature })));
      const strangerKey = generatePrivateKey();
      // One signature of an enabled attester: fewer than the threshold, refused by its length.
      expect(await revertOf((await attested([k0])).attestation)).toEqual({ error: 'InvalidAttestationLength', args: [65n, 130n] });
      // All three: the attestation is exactly threshold x 65 bytes, no more.
      expect(await revertOf((await attested([k0, k1, k2])).attestation)).toEqual({ error: 'InvalidAttestationLength', args: [195n, 130n] });
      // Out of signer order, and one signer twice: refused (no signer counts twice).
      expect(await revertOf(concat([second, first]))).toEqual({ error: 'SignerOutOfOrder', args: [signers[0]] });
      expect(await revertOf(concat([first, first]))).toEqual({ error: 'SignerOutOfOrder', args: [signers[0]] });
      // Two signers in order, one of them not an enabled attester.
      expect(await revertOf((await attested([k1, strangerKey])).attestation)).toEqual({
        error: 'NotEnabledAttester',
        args: [privateKeyToAccount(strangerKey).address],
      });
      expect((await attested()).attestation).not.toBe(twoOfThree); // the default pair signs differently: still 2 of 3
      expect(await revertOf(twoOfThree)).toBe('accepted');

      // The 2-of-3 attestation mints exactly once: amount less the executed fee to the recipient.
      const feeBefore = await destBalance(DEVNET_BRIDGE_FEE_COLLECTOR);
      const target = createWalletClient({ account: caller!, chain: chainOf(dst), transport: http(dst.rpcUrl) });
      const mint = await target.writeContract({ ...transmitter, functionName: 'receiveMessage', args: [message, twoOfThree] });
      expect((await dest.waitForTransactionReceipt({ hash: mint })).status).toBe('success');
      const fee = decodeBurnMessage(message).body.feeExecuted;
      expect(fee).toBe(1_000n); // the double's fast 10 bps, under maxFee 5,000
      expect(await destBalance(recipient!.address)).toBe(amount - fee);
      expect(await destBalance(DEVNET_BRIDGE_FEE_COLLECTOR)).toBe(feeBefore + fee);
      expect(await revertOf(twoOfThree)).toEqual({ error: 'NonceUsed', args: [decodeBurnMessage(message).nonce] });
      expect(await revertOf((await attested()).attestation)).toEqual({ error: 'NonceUsed', args: [decodeBurnMessage(message).nonce] });
      expect(await destBalance(recipient!.address)).toBe(amount - fee);
    } finally {
      attester.attestWith();
    }
  });

  test('a same-chain-only destination is refused', async () => {
    const body = await pay({ name: 'USDC', version: '2', destinationChainId: 5042002 }); // arc-testnet
    const res = await h.settle(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'cross_chain_not_supported',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });
  });

  test('an unknown destination chain is refused', async () => {
    const body = await pay({ name: 'USDC', version: '2', destinationChainId: 999_999 });
    const res = await h.settle(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'unsupported_destination_chain',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });
  });

  test('a payment refused before broadcast answers its reason, and a corrected retry runs again', async () => {
    const forged = await h.pay(buyer, {
      value: VALUE,
      signer: TEST_ACCOUNTS.buyers[0],
      extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA },
    });
    const res = await h.settle(forged);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'invalid_exact_evm_payload_signature',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });

    // The same authorization (nonce), now properly signed: the failed run does not block it.
    const good = await h.pay(buyer, {
      value: VALUE,
      nonce: forged.paymentPayload.payload.authorization.nonce as Hex,
      validBefore: BigInt(forged.paymentPayload.payload.authorization.validBefore),
      validAfter: BigInt(forged.paymentPayload.payload.authorization.validAfter),
      extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA },
    });
    attester.release();
    const ok = await h.settle(good);
    expect(ok.status).toBe(200);
    expect(ok.body.success).toBe(true);
    await delivered(settleWorkflowId('base-sepolia', buyer.address, good.paymentPayload.payload.authorization.nonce));
  });

  test('a source chain that does not mine: 202 pending with the source hash, then 200 with the same hash', async () => {
    const srcRpc = h.stack.chains['base-sepolia'].rpcUrl;
    const body = await pay();
    await rpc(srcRpc, 'evm_setAutomine', [false]);
    let pending;
    try {
      pending = await h.settleUntilBroadcast(body);
    } finally {
      await rpc(srcRpc, 'evm_mine', []);
      await rpc(srcRpc, 'evm_setAutomine', [true]);
    }
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({
      success: false,
      errorReason: 'settlement_pending',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const final = await h.settleUntilFinal(body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: pending.body.transaction, network: 'base-sepolia', payer: buyer.address });
    attester.release();
    await delivered(settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce));
  });

  test('the source chain id as destination settles on the source chain', async () => {
    const body = await pay({ name: 'USDC', version: '2', destinationChainId: 84532 });
    const res = await h.settleUntilFinal(body);
    expect(res.status).toBe(200);
    const row = await h.tdb.db.em
      .fork()
      .findOneOrFail(Settlement, { id: settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce) });
    expect(row.route).toBe('eip3009');
    expect(await h.settledEvents(buyer.address, body.paymentPayload.payload.authorization.nonce as Hex)).toBe(1);
  });

  test('worker killed between burn and mint: after restart the mint and payout happen exactly once', async () => {
    const destStart = await dest.getBlockNumber({ cacheTime: 0 }); // deliveries after this block are this test's
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const payoutBefore = await destBalance(h.payout);
    const relayerDestNonce = await dest.getTransactionCount({ address: relayer.address });

    const res = await h.settle(body);
    expect(res.status).toBe(200);
    // The bridge leg is running and waiting for the attestation.
    await waitUntil('the bridge leg to wait for its attestation', async () => (await bridgeRow(workflowId))?.state === 'burned', {
      timeoutMs: 30_000,
      intervalMs: 100,
    });

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    expect(await mints(undefined, destStart)).toHaveLength(0);

    attester.release();
    const transfer = await delivered(workflowId);
    expect(await mints(undefined, destStart)).toHaveLength(1);
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
    expect(await payouts(transfer.bridgeNonce)).toHaveLength(1);
    expect(transfer.payoutAmount).toBe(PAYOUT.toString());
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    // One destination transaction from this relayer, recorded once.
    expect(await dest.getTransactionCount({ address: relayer.address })).toBe(relayerDestNonce + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: 'bridge:%' }, hash: transfer.mintTx! });
    expect(recorded).toHaveLength(1);
    const repeat = await h.settle(body);
    expect(repeat.body).toEqual(res.body);
  });

  test('worker killed with the mint in the mempool: the same transaction completes, no second mint', async () => {
    const destRpc = h.stack.chains['optimism-sepolia'].rpcUrl;
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const payoutBefore = await destBalance(h.payout);
    const relayerDestNonce = await dest.getTransactionCount({ address: relayer.address });

    const res = await h.settle(body);
    expect(res.status).toBe(200);

    await rpc(destRpc, 'evm_setAutomine', [false]);
    attester.release();
    const minting = await waitUntil(
      'the mint to be broadcast',
      async () => {
        const row = await bridgeRow(workflowId);
        return row?.state === 'minting' && row.mintTx ? row : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect((await dest.getTransaction({ hash: minting.mintTx as Hex })).blockNumber).toBeNull();

    await h.restartWorker({ kill: true });
    await rpc(destRpc, 'evm_mine', []);
    await rpc(destRpc, 'evm_setAutomine', [true]);
    const transfer = await delivered(workflowId);
    expect(transfer.mintTx).toBe(minting.mintTx);
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    expect(await dest.getTransactionCount({ address: relayer.address })).toBe(relayerDestNonce + 1);
  });
});

import { onChainSignature } from '../src/chains/evm/buyer-signature';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { decodeFunctionData, encodeFunctionData, parseEventLogs, parseTransaction, type Address, type Hex, type PublicClient } from 'viem';
import type { Config } from '../src/config';
import type { EvmNetworkId } from '../src/chains/networks';
import {
  bpsOf,
  CCTP_FINALITY_FAST,
  CCTP_FINALITY_FINALIZED,
  decodeBurnMessage,
  fastFeeOf,
  fastMaxFee,
  type BurnTerms,
  isAttestationForm,
  isAttestedFormOf,
} from '../src/chains/evm/bridge';
import { eip3009 } from '../src/schemes/eip3009';
import type { Verification, WorkerDeps } from '../src/schemes/scheme';
import { revertOf, sendCall } from '../src/chains/evm/calls';
import { Relayer } from '../src/chains/evm/relayer';
import { ensureWalletDeployed } from '../src/chains/evm/wallet-deploy';
import { settlementRecords } from '../src/settle/records';
import { Settlement } from '../src/db/entities';
import { BRIDGE_ABANDONED, BridgeTransfer } from '../src/db/bridge-transfer';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { BridgeTransferInput, CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';
import type { SettleResponse } from '../src/x402/schemas';
import { readBoundedText } from '../src/upstream/bounded-body';
import { settlementAllowed } from '../src/chains/mainnet-gate';
import { undeliverableLeg } from '../src/settle/evm-request';
import { termsRefusal, type TermsDeps } from './settlement-terms';
import { facilitatorAbi, messageTransmitterV2Abi } from '../src/chains/evm/abi';

/** `topUpRelayer`: the top-up gateway's relayer wallet, whose settlements are top-up legs (src/chains/mainnet-gate.ts). */
export interface CrossChainActivityDeps extends WorkerDeps, TermsDeps {
  config: WorkerDeps['config'] & TermsDeps['config'] & Pick<Config, 'BRIDGE_ATTESTATION_URL' | 'BRIDGE_MAX_FEE_BPS'>;
}

export type BurnSubmitted = { submitted: true; hash: Hex } | { submitted: false; reason: 'invalid_transaction_state'; detail: string };
/** The source receipt: the response the seller gets, and the burn message when it succeeded. */
export type BurnOutcome = { response: SettleResponse; message?: Hex };
/** The attested message (nonce, executed finality and fee filled in by the service) and its attestation. */
export type AttestedMessage = { message: Hex; attestation: Hex; nonce: Hex };
export type AttestationPoll = { status: 'pending' } | ({ status: 'complete' } & AttestedMessage);
export type MintSubmitted = { submitted: true; hash: Hex } | { submitted: false; error: string };

/**
 * Activities of cross-chain EIP-3009 settlement and its bridge leg. Every one is idempotent: the
 * burn and the mint go through the write-ahead relayer under business-key ids, receipts are read
 * from the recorded hash, and the mint checks the transmitter's used nonce before signing.
 */
export function createCrossChainActivities(deps: CrossChainActivityDeps) {
  const network = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n || !n.facilitator || !n.usdc) throw ApplicationFailure.nonRetryable(`network ${id} is not configured`, 'invalid_network');
    if (!n.bridgeMessenger || !n.bridgeTransmitter)
      throw ApplicationFailure.nonRetryable(`network ${id} has no bridge`, 'cross_chain_not_supported');
    return n as typeof n & { facilitator: Address; usdc: Address; bridgeMessenger: Address; bridgeTransmitter: Address };
  };

  // The one settlement record (src/settle/records.ts); payer and amount come from the authorization,
  // so inputs of runs started before those fields existed record the same.
  const records = settlementRecords(deps.db);
  const asRecord = (input: CrossChainSettleInput) => {
    const a = input.paymentPayload.payload.authorization;
    return { ...input, payer: a.from, amount: a.value };
  };
  const recordSettlement = (input: CrossChainSettleInput, state: string, extra: Partial<Settlement> = {}) =>
    records.record(asRecord(input), state, extra);

  const recordBridge = async (input: BridgeTransferInput, state: string, extra: Partial<BridgeTransfer> = {}) => {
    const now = new Date();
    // An abandoned leg was refunded on the source: a later run of it must not make it look alive.
    if (await abandoned(input)) return;
    await deps.db.em.fork().upsert(
      BridgeTransfer,
      {
        id: input.bridgeId,
        settlementId: input.settlementId,
        organizationId: input.organizationId,
        sourceNetwork: input.sourceNetwork,
        destinationNetwork: input.destinationNetwork,
        sourceDomain: input.sourceDomain,
        destinationDomain: input.destinationDomain,
        sourceTx: input.sourceTx,
        amount: input.amount,
        recipient: input.payout.toLowerCase(),
        state,
        createdAt: now,
        updatedAt: now,
        ...extra,
      } as BridgeTransfer,
      { onConflictExcludeFields: ['createdAt'] },
    );
  };

  /** Today's terms before fast finality existed: a finalized burn with the settlement's `maxBridgeFee`. */
  const standardTerms = (input: CrossChainSettleInput, fellBack?: string): BurnTerms => ({
    finality: 'standard',
    minFinalityThreshold: CCTP_FINALITY_FINALIZED,
    maxFee: input.maxBridgeFee,
    ...(fellBack ? { fellBack } : {}),
  });

  /**
   * The burn's facilitator call (`settleAndBurn`), from the input's signed authorization, our network
   * table and the burn's terms (a run started before terms were read burns at standard).
   */
  const burnCall = (input: CrossChainSettleInput, terms: BurnTerms = standardTerms(input)) => {
    const src = network(input.network);
    const dst = network(input.destinationNetwork);
    const a = input.paymentPayload.payload.authorization;
    const data = encodeFunctionData({
      abi: facilitatorAbi,
      functionName: 'settleAndBurn',
      args: [
        input.paymentRequirements.asset as Address,
        a.from as Address,
        BigInt(a.value),
        BigInt(a.validAfter),
        BigInt(a.validBefore),
        a.nonce as Hex,
        // A smart wallet's signature goes to the token as is (EIP-1271); an EIP-6492 wrapper's inner one,
        // once submitBridgeBurn has deployed the wallet.
        onChainSignature(input.paymentPayload.payload.signature as Hex),
        {
          messenger: src.bridgeMessenger,
          destinationDomain: input.destinationDomain,
          mintRecipient: dst.facilitator,
          destinationCaller: dst.facilitator,
          maxFee: BigInt(terms.maxFee),
          minFinalityThreshold: terms.minFinalityThreshold,
        },
      ],
    });
    return { to: src.facilitator, data };
  };

  /**
   * The terms this payment's burn was signed with, when its write-ahead record exists and holds this
   * very payment's `settleAndBurn` (a record of another call under a reused workflow id is not ours).
   */
  const recordedBurnTerms = async (input: CrossChainSettleInput): Promise<BurnTerms | undefined> => {
    const tx = await deps.relayerFor(input.network).find(relayerTxId(input.workflowId, 'burn'));
    if (!tx) return undefined;
    let route: { maxFee: bigint; minFinalityThreshold: number };
    try {
      const decoded = decodeFunctionData({ abi: facilitatorAbi, data: parseTransaction(tx.rawTx as Hex).data ?? '0x' });
      if (decoded.functionName !== 'settleAndBurn') return undefined;
      route = decoded.args[7];
    } catch {
      return undefined;
    }
    const terms: BurnTerms = {
      finality: route.minFinalityThreshold <= CCTP_FINALITY_FAST ? 'fast' : 'standard',
      minFinalityThreshold: route.minFinalityThreshold,
      maxFee: route.maxFee.toString(),
    };
    return Relayer.records(tx, burnCall(input, terms)) ? terms : undefined;
  };

  const abandoned = async (input: BridgeTransferInput) =>
    (await deps.db.em.fork().findOne(BridgeTransfer, { id: input.bridgeId }))?.state === BRIDGE_ABANDONED;

  return {
    /**
     * Records the attempt, then the settlement's terms (who is paid, from our records and configuration,
     * never from the input alone: settlement-terms.ts), the destination's ability to credit the payout,
     * and every EIP-3009 verification rule on the source chain (no transaction).
     */
    async verifyCrossChainPayment(input: CrossChainSettleInput): Promise<Verification> {
      const payer = input.paymentPayload.payload.authorization.from;
      // Signed already (a retry after a crash that followed the broadcast): never judge it again.
      // A record of another call under this id (a reused workflow id) is not this payment's: judged afresh.
      if (await recordedBurnTerms(input)) return { isValid: true, payer };
      if (!settlementAllowed(deps, input) || !settlementAllowed(deps, { ...input, network: input.destinationNetwork })) {
        await records.rejected(asRecord(input), 'invalid_network'); // a mainnet while MAINNETS_ENABLED is off
        return { isValid: false, invalidReason: 'invalid_network', payer };
      }
      await records.verifying(asRecord(input));
      network(input.network);
      const destination = network(input.destinationNetwork);
      const refused = await termsRefusal(deps, input);
      if (refused) {
        log.warn('cross-chain settlement refused: its terms are not ours', { workflowId: input.workflowId, refused });
        await records.rejected(asRecord(input), 'invalid_payment_requirements');
        return { isValid: false, invalidReason: 'invalid_payment_requirements', payer };
      }
      // A payout the destination could not credit: its mint would revert after the burn (as the API
      // asks; a read without an answer throws, retried).
      const leg = await undeliverableLeg(deps.networks, destination, input.payout);
      if (leg) {
        log.warn('cross-chain settlement refused: the destination could not credit its payout', {
          workflowId: input.workflowId,
          message: leg.message,
        });
        await records.rejected(asRecord(input), leg.refused);
        return { isValid: false, invalidReason: leg.refused, payer };
      }
      const v = await eip3009.verify(input, deps);
      if (!v.isValid) await records.rejected(asRecord(input), v.invalidReason);
      return v;
    },

    /**
     * The terms of this payment's burn, read once before it (the workflow records the answer, so a
     * replay never reads again). The source network's `BRIDGE_FINALITY_<NET>` decides: standard burns
     * with the settlement's `maxBridgeFee` as today; fast reads the route's fast fee from the
     * attestation service (`GET /v2/burn/USDC/fees/{src}/{dst}`) and burns with Circle's client's
     * `maxFee` for it (fee rounded up, +10%). A fast fee above `maxBridgeFee` (BRIDGE_MAX_FEE_BPS of the
     * value; a top-up: its quote) or above BRIDGE_MAX_FEE_BPS of the value, or a route without a fast
     * tier, burns at standard instead
     * (docs/decisions/fast-finality.md). No answer from the service is unknown, never a guess: it throws, retried.
     * A burn already signed for this payment answers the terms it was signed with.
     */
    async readBridgeBurnTerms(input: CrossChainSettleInput): Promise<BurnTerms> {
      const recorded = await recordedBurnTerms(input);
      if (recorded) return recorded;
      if (network(input.network).bridgeFinality !== 'fast') return standardTerms(input);
      const service = deps.config.BRIDGE_ATTESTATION_URL;
      if (!service) throw ApplicationFailure.retryable('BRIDGE_ATTESTATION_URL is not set', 'FeeUnavailable');
      const url = `${service.replace(/\/$/, '')}/v2/burn/USDC/fees/${input.sourceDomain}/${input.destinationDomain}`;
      const res = await fetch(url, { signal: AbortSignal.timeout(10_000) }).catch((err: unknown) => {
        throw ApplicationFailure.retryable(`fee endpoint unreachable: ${String(err)}`, 'FeeUnavailable');
      });
      if (!res.ok) throw ApplicationFailure.retryable(`fee endpoint answered ${res.status}`, 'FeeUnavailable');
      let body: unknown;
      try {
        body = JSON.parse(await readBoundedText(res, 64 * 1024));
      } catch {
        body = undefined;
      }
      const scaledBps = fastFeeOf(body);
      if (scaledBps === undefined) throw ApplicationFailure.retryable('fee endpoint answered no fee tiers', 'FeeUnavailable');
      if (scaledBps === 'none') {
        log.warn('no fast tier on this route: the burn is standard', { workflowId: input.workflowId });
        return standardTerms(input, 'the attestation service offers no fast transfer on this route');
      }
      const value = BigInt(input.paymentPayload.payload.authorization.value);
      const maxFee = fastMaxFee(value, scaledBps);
      // The bound is our configuration's as well as the input's: a run started by hand cannot raise it.
      const configured = bpsOf(value, deps.config.BRIDGE_MAX_FEE_BPS);
      const bound = BigInt(input.maxBridgeFee) < configured ? BigInt(input.maxBridgeFee) : configured;
      if (maxFee > bound) {
        const fellBack = `fast fee ${maxFee} (${Number(scaledBps) / 100} bps, with Circle's 10% buffer) is over the bound ${bound}`;
        log.warn('fast fee over the bound: the burn is standard', { workflowId: input.workflowId, fellBack });
        return standardTerms(input, fellBack);
      }
      return { finality: 'fast', minFinalityThreshold: CCTP_FINALITY_FAST, maxFee: maxFee.toString() };
    },

    /**
     * Pulls the authorization and burns it toward the destination in one facilitator call, once per
     * workflow (write-ahead relayer record `<workflowId>:burn`), with the terms read before it (none:
     * a run started before they were read, standard); a call that would revert is reported before
     * anything is signed. A counterfactual wallet (EIP-6492) is deployed first, as for a same-chain
     * settlement (src/chains/evm/wallet-deploy.ts: its own write-ahead record `<workflowId>:deploy`, a
     * listed factory only, gas-capped), so a retry after a crash re-sends that deployment's bytes, never
     * a second one, and the burn's estimate runs against the deployed wallet.
     */
    async submitBridgeBurn(input: CrossChainSettleInput, terms?: BurnTerms): Promise<BurnSubmitted> {
      const relayer = deps.relayerFor(input.network);
      const { from } = input.paymentPayload.payload.authorization;
      const ready = await ensureWalletDeployed(
        relayer,
        input.workflowId,
        network(input.network),
        from as Address,
        input.paymentPayload.payload.signature as Hex,
        deps.config.RECEIPT_WAIT_MS,
      );
      if (!ready.ready) {
        await records.rejected(asRecord(input), 'invalid_transaction_state');
        return { submitted: false, reason: 'invalid_transaction_state', detail: ready.detail };
      }
      const sent = await sendCall(relayer, input.workflowId, burnCall(input, terms), 'burn');
      if (!sent.sent) {
        await records.rejected(asRecord(input), 'invalid_transaction_state');
        return { submitted: false, reason: 'invalid_transaction_state', detail: sent.revert };
      }
      await recordSettlement(input, 'submitted', { transaction: sent.hash });
      return { submitted: true, hash: sent.hash };
    },

    /**
     * Waits for the burn's receipt and reads the burn message from the source MessageTransmitterV2's
     * MessageSent log (CCTP V2: the transmitter emits, on behalf of the TokenMessenger). Success
     * records the settle response (the source transaction) that this and every repeat answers.
     */
    async awaitBridgeBurn(input: CrossChainSettleInput): Promise<BurnOutcome> {
      const relayer = deps.relayerFor(input.network);
      const tx = await relayer.find(relayerTxId(input.workflowId, 'burn'));
      if (!tx) throw ApplicationFailure.retryable('no recorded burn transaction yet', 'RecordNotFound');
      const receipt = await relayer.waitForReceipt(tx, deps.config.RECEIPT_WAIT_MS, () => Context.current().heartbeat());
      if (!receipt) throw ApplicationFailure.retryable(`no receipt for ${tx.hash} yet`, 'ReceiptTimeout');
      const payer = input.paymentPayload.payload.authorization.from;
      const transmitter = network(input.network).bridgeTransmitter.toLowerCase();
      const sent = parseEventLogs({ abi: messageTransmitterV2Abi, logs: receipt.logs, eventName: 'MessageSent' }).find(
        (l) => l.address.toLowerCase() === transmitter,
      );
      if (receipt.status !== 'success' || !sent) {
        const response: SettleResponse = {
          success: false,
          errorReason: 'invalid_transaction_state',
          transaction: '',
          network: input.network,
          payer,
        };
        await recordSettlement(input, 'failed', {
          transaction: tx.hash,
          errorReason: 'invalid_transaction_state',
          response: JSON.stringify(response),
        });
        return { response };
      }
      const response: SettleResponse = { success: true, transaction: tx.hash, network: input.network, payer };
      await recordSettlement(input, 'bridging', { transaction: tx.hash, errorReason: null, response: JSON.stringify(response) });
      return { response, message: sent.args.message };
    },

    /**
     * State of the settlement record once the bridge leg ended, and as an operator's action on it
     * moves it (with who and why, `<action>: <reason>`).
     */
    async recordCrossChainOutcome(
      input: CrossChainSettleInput,
      state: 'settled' | 'needs_review' | 'bridging' | 'refunding' | 'refunded',
      by?: Pick<Settlement, 'operator' | 'operatorReason'>,
    ): Promise<void> {
      await deps.db.em.fork().nativeUpdate(Settlement, { id: input.workflowId }, { state, ...by, updatedAt: new Date() });
    },

    async recordBridgeTransfer(
      input: BridgeTransferInput,
      state: string,
      extra: Partial<Pick<BridgeTransfer, 'error' | 'bridgeNonce'>> = {},
    ): Promise<void> {
      await recordBridge(input, state, extra);
    },

    /** One look at the attestation service for the leg's burn (`pollAttestation`). */
    async fetchBridgeAttestation(input: BridgeTransferInput): Promise<AttestationPoll> {
      return pollAttestation(deps.config.BRIDGE_ATTESTATION_URL, input);
    },

    /**
     * Delivers the message on the destination and pays out in one facilitator call. A recorded
     * transaction is re-sent as is; without one, a nonce the transmitter already marks used means
     * someone else delivered it (needs review: our payout did not happen through this workflow).
     */
    async submitBridgeMint(input: BridgeTransferInput, attested: AttestedMessage): Promise<MintSubmitted> {
      const dst = network(input.destinationNetwork);
      const relayer = deps.relayerFor(input.destinationNetwork);
      const txId = relayerTxId(input.bridgeId, 'mint');
      // Its payer was refunded (operator action abandon-bridge): minting now would pay the seller too.
      if (await abandoned(input)) return { submitted: false, error: 'bridge leg abandoned: its payer was refunded' };
      if (!(await relayer.find(txId))) {
        const used = await relayer.client.readContract({
          address: dst.bridgeTransmitter,
          abi: messageTransmitterV2Abi,
          functionName: 'usedNonces',
          args: [attested.nonce],
        });
        if (used !== 0n) return { submitted: false, error: 'bridge message already delivered by another caller' };
      }
      const data = encodeFunctionData({
        abi: facilitatorAbi,
        functionName: 'receiveAndPayout',
        args: [
          dst.bridgeTransmitter,
          attested.message,
          attested.attestation,
          dst.usdc,
          input.payout as Address,
          BigInt(input.fee),
          input.feeRecipient as Address,
        ],
      });
      try {
        const { hash } = await relayer.send(txId, { to: dst.facilitator, data });
        await recordBridge(input, 'minting', { mintTx: hash });
        return { submitted: true, hash };
      } catch (err) {
        const revert = revertOf(err);
        if (!revert) throw err;
        return { submitted: false, error: `mint would revert: ${revert}` };
      }
    },

    /** Waits for the mint's receipt and records what arrived and what was paid. */
    async awaitBridgeMint(
      input: BridgeTransferInput,
    ): Promise<{ ok: boolean; mintTx: string; received?: string; bridgeFee?: string; fee?: string; payoutAmount?: string }> {
      const relayer = deps.relayerFor(input.destinationNetwork);
      const tx = await relayer.find(relayerTxId(input.bridgeId, 'mint'));
      if (!tx) throw ApplicationFailure.retryable('no recorded mint transaction yet', 'RecordNotFound');
      const receipt = await relayer.waitForReceipt(tx, deps.config.RECEIPT_WAIT_MS, () => Context.current().heartbeat());
      if (!receipt) throw ApplicationFailure.retryable(`no receipt for ${tx.hash} yet`, 'ReceiptTimeout');
      const dst = network(input.destinationNetwork);
      const paid = parseEventLogs({ abi: facilitatorAbi, logs: receipt.logs, eventName: 'BridgePayout' }).find(
        (l) => l.address.toLowerCase() === dst.facilitator.toLowerCase(),
      );
      if (receipt.status !== 'success' || !paid) {
        await recordBridge(input, 'needs_review', { mintTx: tx.hash, error: 'mint transaction reverted' });
        return { ok: false, mintTx: tx.hash };
      }
      const received = paid.args.received;
      const result = {
        received: received.toString(),
        bridgeFee: (BigInt(input.amount) - received).toString(),
        fee: paid.args.fee.toString(),
        payoutAmount: (received - paid.args.fee).toString(),
      };
      await recordBridge(input, 'delivered', { mintTx: tx.hash, ...result, error: null });
      return { ok: true, mintTx: tx.hash, ...result };
    },
  };
}

/**
 * One look at the attestation service (Iris v2: `{messages: [{message, attestation, status}]}`) for
 * the burn of `leg.sourceTx`. Only a complete attestation of `leg.message` (as the burn emitted it)
 * counts (the service fills in the nonce, executed finality and fee; every other field must be what
 * we burned). An attestation is one or more 65-byte signatures (as many as the destination
 * transmitter's threshold, which it checks); anything else is pending. 404 (not indexed yet) is
 * pending; other failures retry.
 */
export async function pollAttestation(
  service: string | undefined,
  leg: { sourceDomain: number; sourceTx: string; message: string },
): Promise<AttestationPoll> {
  // Production start-up refuses a bridge without it; the caller waits rather than fail.
  if (!service) throw ApplicationFailure.retryable('BRIDGE_ATTESTATION_URL is not set', 'AttestationUnavailable');
  const url = `${service.replace(/\/$/, '')}/v2/messages/${leg.sourceDomain}?transactionHash=${leg.sourceTx}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (res.status === 404) return { status: 'pending' };
  if (!res.ok) throw ApplicationFailure.retryable(`attestation service answered ${res.status}`, 'AttestationUnavailable');
  const body = JSON.parse(await readBoundedText(res, 1024 * 1024)) as {
    messages?: { message?: string; status?: string; attestation?: string }[];
  };
  const ours = body.messages?.find(
    (m) =>
      m.status === 'complete' &&
      isAttestationForm(m.attestation ?? '') &&
      /^0x([0-9a-fA-F]{2})+$/.test(m.message ?? '') &&
      isAttestedFormOf(leg.message as Hex, m.message as Hex),
  );
  if (!ours) return { status: 'pending' };
  const message = ours.message as Hex;
  return { status: 'complete', message, attestation: ours.attestation as Hex, nonce: decodeBurnMessage(message).nonce };
}

/**
 * The burn message a source transaction emitted, read from its receipt (the MessageSent log of the
 * source transmitter); undefined when the transaction emitted none. A missing receipt throws (retried).
 */
export async function emittedMessage(client: PublicClient, transmitter: Address, sourceTx: Hex): Promise<Hex | undefined> {
  const receipt = await client.getTransactionReceipt({ hash: sourceTx });
  const sent = parseEventLogs({ abi: messageTransmitterV2Abi, logs: receipt.logs, eventName: 'MessageSent' }).find(
    (l) => l.address.toLowerCase() === transmitter.toLowerCase(),
  );
  return receipt.status === 'success' ? sent?.args.message : undefined;
}

export type CrossChainActivities = ReturnType<typeof createCrossChainActivities>;

import { ApplicationFailure } from '@temporalio/activity';
import {
  BaseError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  decodeFunctionData,
  encodeFunctionData,
  keccak256,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import type { MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { EvmNetworkId, NetworkTable } from '../src/chains/networks';
import type { Relayer } from '../src/chains/evm/relayer';
import { Settlement, TopUp } from '../src/db/entities';
import { BridgeTransfer } from '../src/db/bridge-transfer';
import { nonceOfId, provenPayment, provenReceived } from '../src/chains/evm/payment-proof';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { loadTopupConfig } from '../src/topup/config';
import { l1GasVerdict, type GasVerdict } from '../src/topup/gas-protection';
import { gasCeilingRefusal, owedDespiteGas } from '../src/chains/evm/gas-ceilings';

/** A GasVerdict as an activity result (no bigint). */
export type GasCheck =
  | { broadcast: true; costUsdc: string }
  | { broadcast: false; reason: Extract<GasVerdict, { broadcast: false }>['reason']; costUsdc?: string };
import { TOPUP_DESTINATION_NETWORK, type TopUpInput } from '../src/topup/types';
import type { RoleSigners } from './signers';
import { awaitRecordedReceipt } from '../src/chains/evm/calls';
import { refundOwed } from './topup-refund';
import { recordedCall, sendAsRecorded, sendTransferOnce } from './transfer-once';
import { depositorAbi, facilitatorAbi, merchantAbi, tokenAbi } from '../src/chains/evm/abi';

export interface TopUpActivityDeps extends RoleSigners {
  config: Pick<Config, 'RECEIPT_WAIT_MS' | 'TOPUP_DEPOSITOR_CONTRACT'> & Partial<Pick<Config, 'env'>>;
  db: MikroORM;
  networks: NetworkTable;
  relayerFor(network: EvmNetworkId): Relayer;
}

export type DepositSubmit = { submitted: true; hash: Hex } | { submitted: false; detail: string };

/**
 * The decoded custom error (e.g. `CreditLimitExceeded`) or first message line of a call that would
 * revert; null when the error is not a revert (transient: the activity is retried).
 */
function revertDetail(err: unknown): string | null {
  const refused = gasCeilingRefusal(err); // refused for its gas before signing: as final as a revert
  if (refused) return refused;
  if (!(err instanceof BaseError)) return null;
  const revert = err.walk((e) => e instanceof ContractFunctionRevertedError || /revert/i.test((e as Error).message));
  if (!revert) return null;
  if (revert instanceof ContractFunctionRevertedError && revert.data?.errorName) return revert.data.errorName;
  // A raw eth_estimateGas revert carries the error data only in its message.
  const raw = /custom error (0x[0-9a-fA-F]{8}):?\s*([0-9a-fA-F]*)/.exec(err.message);
  if (raw) {
    try {
      return decodeErrorResult({ abi: merchantAbi, data: `${raw[1]}${raw[2]}` as Hex }).errorName;
    } catch {
      // not one of the merchant contract's errors
    }
  }
  return (revert as Error).message.split('\n')[0];
}

/** The on-chain key of one top-up's merchant deposit: the same for every attempt, different per top-up. */
export const topupDepositId = (workflowId: string): Hex => keccak256(toHex(`x402-facilitator:topup-deposit:${workflowId}`));

/**
 * The deposit call: through the deposit key, unless this top-up's allowance was recorded for the
 * merchant itself (a top-up in flight across the upgrade that introduced the key), which deposits
 * directly as it was prepared to.
 */
async function depositCall(relayer: Relayer, input: TopUpInput, depositor: Address): Promise<{ to: Address; data: Hex }> {
  const approve = await recordedCall(relayer, relayerTxId(input.workflowId, 'approve'));
  const spender = approve && (decodeFunctionData({ abi: tokenAbi, data: approve.data }).args?.[0] as Address | undefined);
  const merchant = input.merchantContract as Address;
  if (spender && spender.toLowerCase() === merchant.toLowerCase()) {
    return {
      to: merchant,
      data: encodeFunctionData({ abi: merchantAbi, functionName: 'deposit', args: [input.buyer as Address, BigInt(input.netAmount)] }),
    };
  }
  return {
    to: depositor,
    data: encodeFunctionData({
      abi: depositorAbi,
      functionName: 'depositOnce',
      args: [topupDepositId(input.workflowId), merchant, input.buyer as Address, BigInt(input.netAmount)],
    }),
  };
}

/**
 * Activities of the TopUpWorkflow. Every transaction goes through the destination relayer's
 * write-ahead record (one id per effect: approve, deposit, refund), so a retried activity re-sends
 * the same bytes instead of a second transaction.
 */
export function createTopUpActivities(deps: TopUpActivityDeps) {
  const relayerOf = (input: TopUpInput): Relayer => {
    // Only the top-up relayer's key (TOPUP_RELAYER_PRIVATE_KEY) moves top-up funds; a top-up whose
    // settlement paid another wallet is not one of ours to deposit or refund.
    const relayer = deps.signerFor('topupRelayer', TOPUP_DESTINATION_NETWORK);
    if (!relayer) throw ApplicationFailure.retryable('this worker holds no key for the top-up relayer', 'WrongRelayer');
    if (relayer.address.toLowerCase() !== input.relayer.toLowerCase())
      throw ApplicationFailure.nonRetryable(`the top-up names ${input.relayer}, not the configured top-up relayer`, 'WrongRelayer');
    return relayer;
  };

  /**
   * A deposit credits only what reached the top-up relayer for this top-up, as the chain shows it:
   * the same-chain settlement's transaction, or the cross-chain leg's mint, must have paid the relayer
   * at least `netAmount`, and the call goes to the configured merchant contract. Otherwise (a workflow
   * started by hand with an inflated amount or another contract) the reason: nothing is approved or
   * deposited, and the workflow refunds what the chain shows was delivered.
   * Asked before a step's first signature only: a retry re-sends the recorded bytes.
   */
  let merchant: string | undefined;
  const merchantContract = () => (merchant ??= loadTopupConfig(deps.config.env ?? {}).TOPUP_MERCHANT_CONTRACT);
  const unbacked = async (input: TopUpInput, relayer: Relayer, step: string): Promise<string | undefined> => {
    if (await relayer.find(relayerTxId(input.workflowId, step))) return undefined;
    const refused = (why: string) => `DepositNotBacked: the top-up deposits ${input.netAmount}, but ${why}`;
    // The allowance and the deposit go only to the configured merchant contract (TOPUP_MERCHANT_CONTRACT).
    if (input.merchantContract.toLowerCase() !== merchantContract().toLowerCase())
      return refused(`it names ${input.merchantContract}, not the configured merchant contract`);
    const em = deps.db.em.fork();
    const settlement = await em.findOne(Settlement, { id: input.settle.workflowId });
    if (!settlement?.transaction) return refused('its settlement has no transaction');
    const usdc = relayer.network.usdc as Address;
    let received: bigint;
    if (settlement.route === 'eip3009-crosschain') {
      const leg = await em.findOne(BridgeTransfer, { settlementId: settlement.id, state: 'delivered' });
      received = leg?.mintTx ? await provenReceived(relayer.client, usdc, leg.mintTx, relayer.address) : 0n;
    } else {
      const source = deps.networks.get(settlement.network as EvmNetworkId);
      const proof =
        source?.id === relayer.network.id
          ? await provenPayment(relayer.client, usdc, settlement.transaction, {
              payer: settlement.payer,
              nonce: nonceOfId(settlement.id),
              wallet: relayer.address,
            })
          : null;
      received = proof?.paid ?? 0n;
    }
    return received < BigInt(input.netAmount) ? refused(`its settlement paid the top-up relayer ${received}`) : undefined;
  };

  return {
    /** Upserts the top-up record in `state`; `createdAt` stays the gateway's acceptance time. */
    async recordTopUp(
      input: TopUpInput,
      state: string,
      extra: Partial<
        Pick<TopUp, 'errorReason' | 'error' | 'settlementTx' | 'depositTx' | 'refundTx' | 'fillTx' | 'operator' | 'operatorReason'>
      > = {},
    ): Promise<void> {
      const row: TopUp = {
        id: input.workflowId,
        merchant: input.merchant,
        buyer: input.buyer.toLowerCase(),
        payer: input.payer.toLowerCase(),
        network: input.network,
        nonce: input.nonce.toLowerCase(),
        grossAmount: input.grossAmount,
        fee: input.fee,
        bridgeFee: input.bridgeFee,
        netAmount: input.netAmount,
        state,
        requestId: input.requestId ?? null,
        createdAt: new Date(input.createdAt),
        updatedAt: new Date(),
        ...extra,
      };
      await deps.db.em.fork().upsert(TopUp, row, { onConflictExcludeFields: ['createdAt'] });
    },

    /**
     * Ethereum gas protection: the estimated L1 cost of the settle call against the facilitator fee
     * (src/topup/gas-protection.ts). Reads only; a failed read counts as "inputs unavailable".
     */
    async checkSettlementGas(input: TopUpInput): Promise<GasCheck> {
      const n = deps.networks.get(input.network as EvmNetworkId);
      const rawPrice = deps.config.env?.TOPUP_ETH_PRICE_USDC;
      const ethPriceUsdc = rawPrice && /^\d+$/.test(rawPrice) ? BigInt(rawPrice) : undefined;
      let gasUnits: bigint | undefined;
      let maxFeePerGas: bigint | undefined;
      try {
        const relayer = deps.relayerFor(input.network as EvmNetworkId);
        maxFeePerGas = (await relayer.client.estimateFeesPerGas()).maxFeePerGas;
        const a = input.settle.paymentPayload.payload.authorization;
        gasUnits = await relayer.client.estimateGas({
          account: relayer.address,
          to: n!.facilitator as Address,
          data: encodeFunctionData({
            abi: facilitatorAbi,
            functionName: 'settle',
            args: [
              input.settle.paymentRequirements.asset as Address,
              a.from as Address,
              BigInt(a.value),
              BigInt(a.validAfter),
              BigInt(a.validBefore),
              a.nonce as Hex,
              input.settle.paymentPayload.payload.signature as Hex,
              input.settle.payout as Address,
              BigInt(input.settle.fee),
              input.settle.feeRecipient as Address,
            ],
          }),
        });
      } catch {
        // unavailable inputs: the rule refuses to broadcast
      }
      const v = l1GasVerdict({ gasUnits, maxFeePerGas, ethPriceUsdc, fee: BigInt(input.fee) });
      // Activity results are JSON: the cost travels as a decimal string.
      return v.broadcast
        ? { broadcast: true, costUsdc: v.costUsdc.toString() }
        : { broadcast: false, reason: v.reason, ...('costUsdc' in v ? { costUsdc: v.costUsdc.toString() } : {}) };
    },

    /**
     * Lets the deposit key pull exactly this deposit: the allowance grows by `netAmount` once per
     * top-up (write-ahead record 'approve'), never to an unlimited amount, and concurrent top-ups add
     * up instead of overwriting each other (USDC's increaseAllowance). The deposit spends it. An
     * allowance recorded for the merchant itself (before deposits carried a key) is re-sent as it was.
     * An approval mined and reverted (a paused token, a blacklisted relayer) is a proven outcome:
     * `ApproveReverted`, not retried; the workflow waits for an operator, whose retry signs a fresh
     * approval (`attempt` 1, 2, ...: a record of its own; a reverted one added nothing).
     */
    async ensureMerchantAllowance(input: TopUpInput, attempt = 0): Promise<void> {
      const relayer = relayerOf(input);
      const step = attempt ? `approve-${attempt + 1}` : 'approve';
      if (await unbacked(input, relayer, step)) return; // submitDeposit refuses it with the reason
      const id = relayerTxId(input.workflowId, step);
      await sendAsRecorded(relayer, id, async () => ({
        to: relayer.network.usdc as Address,
        data: encodeFunctionData({
          abi: tokenAbi,
          functionName: 'increaseAllowance',
          args: [deps.config.TOPUP_DEPOSITOR_CONTRACT as Address, BigInt(input.netAmount)],
        }),
      })).catch(owedDespiteGas); // the deposit (or its refund) is owed: a gas refusal waits, flagged
      const receipt = await awaitRecordedReceipt(relayer, id, deps.config.RECEIPT_WAIT_MS);
      if (receipt.status !== 'success')
        throw ApplicationFailure.nonRetryable(`the top-up relayer's approval ${receipt.hash} was mined and reverted`, 'ApproveReverted');
    },

    /**
     * Sends `deposit(buyer, net)` to the merchant once for this top-up, through the deposit key
     * (OnceDepositor): it marks `topupDepositId(workflowId)` used on chain, so a second transaction of
     * this deposit (a re-nonce, a replacement, another worker) reverts and credits nothing. A call that
     * would revert (credit limit consumed by a concurrent top-up, minimum deposit) is reported before
     * anything is signed.
     */
    async submitDeposit(input: TopUpInput): Promise<DepositSubmit> {
      const relayer = relayerOf(input);
      const refused = await unbacked(input, relayer, 'deposit');
      if (refused) return { submitted: false, detail: refused };
      try {
        const hash = await sendAsRecorded(relayer, relayerTxId(input.workflowId, 'deposit'), () =>
          depositCall(relayer, input, deps.config.TOPUP_DEPOSITOR_CONTRACT as Address),
        );
        return { submitted: true, hash };
      } catch (err) {
        const detail = revertDetail(err);
        if (detail === null) throw err; // transient: Temporal retries
        return { submitted: false, detail };
      }
    },

    /** Receipt of the recorded deposit (retried until known). */
    async awaitDepositReceipt(input: TopUpInput): Promise<{ status: 'success' | 'reverted'; hash: string }> {
      const relayer = relayerOf(input);
      const receipt = await awaitRecordedReceipt(relayer, relayerTxId(input.workflowId, 'deposit'), deps.config.RECEIPT_WAIT_MS);
      const hash = (await relayer.find(relayerTxId(input.workflowId, 'deposit')))!.hash;
      return { status: receipt.status, hash };
    },

    /**
     * Sends the delivered amount back to the payer on the destination chain, once, and waits for it.
     * A transfer that would revert (the relayer lacks the funds) is an operator problem: it is
     * retried with back-off and stays visible in `refunding`. One mined and reverted (a paused token,
     * a blacklisted payer or relayer) is a proven outcome: `RefundReverted`, not retried; the workflow
     * waits for an operator, whose refund is `attempt` 1, 2, ...: a record of its own, under the same
     * on-chain key, so at most one of them ever pays.
     */
    async refundPayer(input: TopUpInput, attempt = 0): Promise<{ hash: string }> {
      const relayer = relayerOf(input);
      const usdc = relayer.network.usdc as Address;
      // Who and how much come from the settlement records (topup-refund.ts), never from the input.
      const { payee, amount } = await refundOwed(deps.db, deps.networks, input, relayer);
      const key = relayerTxId(input.workflowId, 'refund');
      const id = attempt ? relayerTxId(input.workflowId, `refund-${attempt + 1}`) : key;
      // Keyed on chain by the top-up's id: no second transaction of this refund can pay again.
      const hash = await sendTransferOnce(relayer, id, usdc, payee as Address, amount, key);
      const receipt = await awaitRecordedReceipt(relayer, id, deps.config.RECEIPT_WAIT_MS);
      if (receipt.status !== 'success')
        throw ApplicationFailure.nonRetryable(`the refund ${hash} was mined and reverted`, 'RefundReverted');
      return { hash };
    },
  };
}

export type TopUpActivities = ReturnType<typeof createTopUpActivities>;

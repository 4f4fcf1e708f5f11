import type { SettleResponse } from '../src/x402/schemas';
import type { Scheme, WorkerDeps } from '../src/schemes/scheme';
import { SKELETON_SCHEMES } from '../src/schemes/registry';
import { settlementRecords } from '../src/settle/records';
import type { SettlementInput } from '../src/settle/types';
import { settlementAllowed } from '../src/chains/mainnet-gate';
import { ApplicationFailure } from '@temporalio/activity';
import type { EvmNetworkId } from '../src/chains/networks';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { OperatorDecision } from '../workflows/operator-actions';

/** `topUpRelayer`: the top-up gateway's relayer wallet, whose settlements are top-up legs (mainnet-gate.ts). */
export type SettlementActivityDeps = WorkerDeps & { topUpRelayer?: string };

export type VerifyOutcome = { isValid: true } | { isValid: false; response: SettleResponse };
export type SubmitOutcome = { submitted: true; transaction: string } | { submitted: false; response: SettleResponse; detail?: string };

/**
 * Activities of the settlement skeleton. Each one records the state it ends in (one round trip) and
 * hands the scheme-specific part to the input's scheme. Each is idempotent: safe to retry after any crash.
 */
export function createSettlementActivities(deps: WorkerDeps) {
  const records = settlementRecords(deps.db);
  const schemeOf = (input: SettlementInput) => SKELETON_SCHEMES[input.route] as unknown as Scheme<SettlementInput, SettlementInput>;

  return {
    /** Upserts a settlement record (the permit, batched and withdrawal workflows keep theirs here too). */
    recordSettlement: records.upsert,

    /** Every rule the chain must confirm (no transaction); a rejection is recorded. */
    async verifyPayment(input: SettlementInput): Promise<VerifyOutcome> {
      const scheme = schemeOf(input);
      // Signed already (a retry after a crash that followed the broadcast): never judge it again, since
      // the chain now shows the nonce used and the payment may be out.
      // A switched-off mainnet (the API checks this too; a workflow started by hand must not settle there)
      // has no relayer here, so `sent` may throw: only a transaction already out goes on to be confirmed.
      const allowed = settlementAllowed(deps, input);
      const sent = Promise.resolve().then(() => scheme.sent(input, deps));
      if (await sent.catch((err: unknown) => (allowed ? Promise.reject(err) : false))) return { isValid: true };
      if (!allowed) return { isValid: false, response: await records.rejected(input, 'invalid_network') };
      // No row yet: the first one is the rejection, or `submitted` in the write-ahead transaction.
      const v = await scheme.verify(input, deps);
      if (v.isValid) return { isValid: true };
      return { isValid: false, response: await records.rejected(input, v.invalidReason) };
    },

    /** Sends the scheme's transaction once (write-ahead); a retry re-sends the recorded one. */
    async submitPayment(input: SettlementInput): Promise<SubmitOutcome> {
      const sent = await schemeOf(input).submit(input, deps, (em, transaction) => records.submitted(input, transaction, em));
      if (!sent.submitted) {
        return { submitted: false, detail: sent.detail, response: await records.rejected(input, sent.reason, sent.transaction) };
      }
      return sent;
    },

    /** Waits for the outcome of the sent transaction and records the response repeats of the request get. */
    async confirmPayment(input: SettlementInput): Promise<SettleResponse> {
      const { response } = await schemeOf(input).confirm(input, deps, (em, response, transaction) =>
        records.final(input, response, transaction, em),
      );
      return response;
    },

    /**
     * An operator's re-broadcast or replacement of the settlement's EVM transaction (its write-ahead
     * record `<workflowId>:settle` on the settlement's relayer lane); who and why go on the row.
     */
    async nudgeSettlementTransaction(input: SettlementInput, how: 'rebroadcast' | 'replace', by: OperatorDecision) {
      await deps.db.em
        .fork()
        .nativeUpdate(Settlement, { id: input.workflowId }, { operator: by.operator, operatorReason: `${how}: ${by.reason}` });
      try {
        return await deps.relayerFor(input.network as EvmNetworkId, input.workflowId).nudge(relayerTxId(input.workflowId, 'settle'), how);
      } catch (err) {
        if (/no relayer/.test(String(err))) throw ApplicationFailure.nonRetryable(String(err), 'OperatorActionRefused');
        throw err;
      }
    },
  };
}

export type SettlementActivities = ReturnType<typeof createSettlementActivities>;

import type { SettleResponse } from '../src/x402/schemas';
import {
  CONFIRMATION_PENDING,
  type Confirmed,
  type RecordOutcome,
  type Scheme,
  type SubmitResult,
  type Verification,
  type WorkerDeps,
} from '../src/schemes/scheme';
import { eip3009 } from '../src/schemes/eip3009';
import { permit2 } from '../src/schemes/permit2';
import { solana } from '../src/schemes/solana';
import type { RecordSent } from '../src/chains/evm/calls';
import { settlementRecords } from '../src/settle/records';
import { VERIFY_ATTEMPTS, type SettlementInput } from '../src/settle/types';
import { settlementAllowed } from '../src/chains/mainnet-gate';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { termsRefusal, type TermsDeps } from './settlement-terms';
import type { EvmNetworkId } from '../src/chains/networks';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { OperatorDecision } from '../workflows/operator-actions';
import { heartbeatWhile } from './heartbeat';

/**
 * `topUpRelayer`: the top-up gateway's relayer wallet, whose settlements are top-up legs (mainnet-gate.ts);
 * `revenueWallet`: the payout of our own paid services (settlement-terms.ts).
 */
export type SettlementActivityDeps = WorkerDeps & TermsDeps & { config: WorkerDeps['config'] & TermsDeps['config'] };

export type VerifyOutcome = { isValid: true } | { isValid: false; response: SettleResponse };
export type SubmitOutcome = { submitted: true; transaction: string } | { submitted: false; response: SettleResponse; detail?: string };
/** Where the fast path ended: rejected (recorded), out but not mined within its wait, or the final outcome. */
export type SettleAttempt =
  | { state: 'rejected'; at: 'verification' | 'submission'; response: SettleResponse; detail?: string }
  | { state: 'submitted'; transaction: string }
  | { state: 'settled' | 'failed'; response: SettleResponse };

/**
 * How long the fast path waits for the receipt before it hands over to `confirmPayment`. Shorter than
 * the 8 s after which a workflow task held open by local activities lets updates in (80% of the 10 s
 * task timeout): an operator's action on a stuck transaction then finds the workflow in `submitted`,
 * as it did when confirmation was its own local activity. Its end re-sends the same bytes (the
 * relayer's wait does on a timeout): the same hash, so at worst a dropped transaction is back sooner.
 */
export const FAST_CONFIRM_WAIT_MS = 5_000;

/** The three steps of a settlement, as the activities run them (the workflow tests pass stand-ins). */
export interface SettlementSteps {
  verify(input: SettlementInput): Promise<VerifyOutcome>;
  submit(input: SettlementInput): Promise<SubmitOutcome>;
  /** Waits up to `waitMs` (default RECEIPT_WAIT_MS), then throws a retryable CONFIRMATION_PENDING type. */
  confirm(input: SettlementInput, waitMs?: number): Promise<SettleResponse>;
}

/**
 * The settlement activities over its steps: one per step (the path of workflows written before
 * `settlement-one-local-activity`, and `confirmPayment` after a fast path that ran out of wait),
 * and `settlePayment`, all three in one local activity (docs/decisions/local-activities.md).
 */
export function settlementStepActivities(steps: SettlementSteps, receiptWaitMs: number) {
  return {
    verifyPayment: (input: SettlementInput) => steps.verify(input),
    submitPayment: (input: SettlementInput) => steps.submit(input),
    confirmPayment: (input: SettlementInput) => steps.confirm(input),

    /**
     * Verify, submit and wait a little for the receipt, in one local activity (one activation and one
     * marker instead of three), retried as a whole until the outcome is known: a retry verifies again
     * only when nothing was signed (verify checks `sent` first) and re-sends the recorded bytes.
     */
    async settlePayment(input: SettlementInput): Promise<SettleAttempt> {
      const verification = await steps.verify(input).catch((err: unknown) => {
        // Nothing was sent: verification keeps its own budget (the one of SETTLEMENT_RETRY.verify), then
        // the workflow fails with the last error, not a rejection, as when it was its own activity.
        throw Context.current().info.attempt >= VERIFY_ATTEMPTS ? ApplicationFailure.fromError(err, { nonRetryable: true }) : err;
      });
      if (!verification.isValid) return { state: 'rejected', at: 'verification', response: verification.response };
      const sent = await steps.submit(input);
      if (!sent.submitted) return { state: 'rejected', at: 'submission', response: sent.response, detail: sent.detail };
      try {
        const response = await steps.confirm(input, Math.min(FAST_CONFIRM_WAIT_MS, receiptWaitMs));
        return { state: response.success ? 'settled' : 'failed', response };
      } catch (err) {
        // Not mined yet: the workflow moves to `submitted` (where operators may nudge it) and waits in confirmPayment.
        if (err instanceof ApplicationFailure && CONFIRMATION_PENDING.includes(err.type ?? '')) {
          return { state: 'submitted', transaction: sent.transaction };
        }
        throw err;
      }
    },
  };
}

/** A settlement's scheme, bound to its workflow input: what the skeleton's steps ask of it. */
interface SchemeOfInput {
  sent(deps: WorkerDeps): Promise<boolean>;
  simulate?(deps: WorkerDeps): Promise<boolean>;
  verify(deps: WorkerDeps, simulated?: Promise<boolean>): Promise<Verification>;
  submit(deps: WorkerDeps, record: RecordSent): Promise<SubmitResult>;
  confirm(deps: WorkerDeps, record: RecordOutcome, waitMs?: number): Promise<Confirmed>;
}

/**
 * The scheme that settles a workflow input, by its `route`: the worker's registry of the skeleton's
 * schemes (a new scheme adds its case; the compiler names a route without one).
 */
export function schemeOf(input: SettlementInput): SchemeOfInput {
  switch (input.route) {
    case 'eip3009':
      return bind(eip3009, input);
    case 'permit2':
      return bind(permit2, input);
    case 'solana':
      return bind(solana, input);
  }
}

function bind<P, I extends SettlementInput & P>(scheme: Scheme<P, I>, input: I): SchemeOfInput {
  const simulate = scheme.simulate;
  return {
    sent: (deps) => scheme.sent(input, deps),
    simulate: simulate && ((deps) => simulate.call(scheme, input, deps)),
    verify: (deps, simulated) => scheme.verify(input, deps, simulated),
    submit: (deps, record) => scheme.submit(input, deps, record),
    confirm: (deps, record, waitMs) => scheme.confirm(input, deps, record, waitMs),
  };
}

/**
 * Activities of the settlement skeleton. Each one records the state it ends in (one round trip) and
 * hands the scheme-specific part to the input's scheme. Each is idempotent: safe to retry after any crash.
 */
export function createSettlementActivities(deps: SettlementActivityDeps) {
  const records = settlementRecords(deps.db);

  const steps: SettlementSteps = {
    /** Every rule the chain must confirm (no transaction); a rejection is recorded. */
    async verify(input) {
      const scheme = schemeOf(input);
      // Signed already (a retry after a crash that followed the broadcast): never judge it again, since
      // the chain now shows the nonce used and the payment may be out.
      // A switched-off mainnet (the API checks this too; a workflow started by hand must not settle there)
      // has no relayer here, so `sent` may throw: only a transaction already out goes on to be confirmed.
      const allowed = settlementAllowed(deps, input);
      const sent = Promise.resolve().then(() => scheme.sent(deps));
      if (!allowed) {
        if (await sent.catch(() => false)) return { isValid: true };
        return { isValid: false, response: await records.rejected(input, 'invalid_network') };
      }
      // Verification, with the settling transaction's simulation (which submission reuses), runs beside
      // that lookup; its answer counts only when nothing was signed yet. A simulation that reverted
      // makes the scheme read the chain to name the reason; one that got no answer fails verification
      // as a read would (retried).
      const simulate = scheme.simulate;
      const simulated = simulate && Promise.resolve().then(() => simulate(deps));
      simulated?.catch(() => undefined); // awaited by the reads, unless a rule without the chain failed first
      const verified = Promise.resolve().then(() => scheme.verify(deps, simulated));
      verified.catch(() => undefined); // awaited below unless the payment was signed already
      // Who is paid comes from our records and configuration, never from the input alone (settlement-terms.ts).
      const terms = input.route === 'solana' ? Promise.resolve(undefined) : termsRefusal(deps, input);
      terms.catch(() => undefined); // awaited below unless the payment was signed already
      if (await sent) return { isValid: true };
      const refused = await terms;
      if (refused) {
        log.warn('settlement refused: its terms are not ours', { workflowId: input.workflowId, refused });
        return { isValid: false, response: await records.rejected(input, 'invalid_payment_requirements') };
      }
      // No row yet: the first one is the rejection, or `submitted` in the write-ahead transaction.
      const v = await verified;
      if (v.isValid) return { isValid: true };
      // The record was read beside verification, so an attempt of this same settlement running
      // concurrently (a workflow task timed out and its local activity started again) may have
      // written it and broadcast since: the chain then shows the nonce used by our own transaction.
      // Read it again before a verdict that would report a payment that moved as rejected.
      if (await scheme.sent(deps)) return { isValid: true };
      return { isValid: false, response: await records.rejected(input, v.invalidReason) };
    },

    /** Sends the scheme's transaction once (write-ahead); a retry re-sends the recorded one. */
    async submit(input) {
      const sent = await schemeOf(input).submit(deps, (em, transaction) => records.submitted(input, transaction, em));
      if (!sent.submitted) {
        return { submitted: false, detail: sent.detail, response: await records.rejected(input, sent.reason, sent.transaction) };
      }
      return sent;
    },

    /** Waits for the outcome of the sent transaction and records the response repeats of the request get. */
    async confirm(input, waitMs) {
      const { response } = await schemeOf(input).confirm(
        deps,
        (em, response, transaction) => records.final(input, response, transaction, em),
        waitMs,
      );
      return response;
    },
  };

  return {
    /** Upserts a settlement record (the permit, batched and withdrawal workflows keep theirs here too). */
    recordSettlement: records.upsert,

    ...settlementStepActivities(steps, deps.config.RECEIPT_WAIT_MS),

    /**
     * An operator's re-broadcast or replacement of the settlement's EVM transaction (its write-ahead
     * record `<workflowId>:settle` on the settlement's relayer lane); who and why go on the row.
     */
    async nudgeSettlementTransaction(input: SettlementInput, how: 'rebroadcast' | 'replace', by: OperatorDecision) {
      await deps.db.em
        .fork()
        .nativeUpdate(Settlement, { id: input.workflowId }, { operator: by.operator, operatorReason: `${how}: ${by.reason}` });
      try {
        const relayer = deps.relayerFor(input.network as EvmNetworkId, input.workflowId);
        return await heartbeatWhile(() => relayer.nudge(relayerTxId(input.workflowId, 'settle'), how));
      } catch (err) {
        if (/no relayer/.test(String(err))) throw ApplicationFailure.nonRetryable(String(err), 'OperatorActionRefused');
        throw err;
      }
    },
  };
}

export type SettlementActivities = ReturnType<typeof createSettlementActivities>;

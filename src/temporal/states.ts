/**
 * Every `X402Kind` and the `X402State` values its workflows move through: the one list the
 * workflows' state helpers are typed against, the stuck scan reads, and the README's operator table
 * shows (test/unit/workflow-states.test.ts compares them). Pure data: safe in the workflow sandbox.
 *
 * `terminal`: the workflow has ended, or ends without waiting on anything more (a media job marked
 * `failed` still starts its refund, which is a workflow of its own). `patient`: non-terminal states
 * that wait by design for longer than any stuck threshold (a withdrawal's block delay, a charge
 * guard's start delay); the stuck scan skips them. `awaitsOperator`: terminal states in which a
 * workflow that is still running waits for an operator's action (README "For operators"); the stuck
 * scan counts those, so a payment nobody has looked at raises its hand.
 */
export const X402_KINDS = {
  settle: {
    what: 'every settlement: EIP-3009 (same- and cross-chain), Permit2, Solana, batched forwarding',
    states: [
      'verifying',
      'forwarding',
      'submitted',
      'bridging',
      'refunding',
      'settled',
      'accepted',
      'failed',
      'rejected',
      'needs_review',
      'refunded',
    ],
    terminal: ['settled', 'accepted', 'failed', 'rejected', 'needs_review', 'refunded'],
    patient: [],
    awaitsOperator: ['needs_review'],
  },
  bridge: {
    what: 'the bridge leg of a cross-chain settlement (attestation, mint, payout)',
    states: ['burned', 'attested', 'minting', 'delivered', 'needs_review'],
    terminal: ['delivered', 'needs_review'],
    patient: [],
  },
  permit: {
    what: 'POST /v1/permit',
    states: ['verifying', 'submitted', 'executed', 'failed', 'rejected'],
    terminal: ['executed', 'failed', 'rejected'],
    patient: [],
  },
  topup: {
    what: 'a merchant top-up (settle, bridge, deposit or refund)',
    states: ['settling', 'bridging', 'depositing', 'refunding', 'deposited', 'refunded', 'failed', 'deferred', 'needs_review'],
    terminal: ['deposited', 'refunded', 'failed', 'deferred', 'needs_review'],
    patient: [],
    awaitsOperator: ['needs_review'],
  },
  media: {
    what: 'a paid media job',
    states: ['paying', 'running', 'submitted', 'cancelling', 'storing', 'succeeded', 'failed', 'cancelled', 'payment_rejected'],
    terminal: ['succeeded', 'failed', 'cancelled', 'payment_rejected'],
    patient: [],
  },
  refund: {
    what: 'a refund of a paid chat or media charge, and the charge guard',
    states: ['guard', 'refund_pending', 'refund_submitted', 'needs_review', 'refunded', 'refund_failed', 'not_owed', 'not_charged'],
    terminal: ['refunded', 'refund_failed', 'not_owed', 'not_charged'],
    patient: ['guard'],
  },
  withdrawal: {
    what: 'a gateway-wallet withdrawal',
    states: ['initiating', 'waiting', 'withdrawing', 'needs_review', 'withdrawn', 'failed'],
    terminal: ['withdrawn', 'failed'],
    patient: ['waiting'],
  },
} as const;

export type X402Kind = keyof typeof X402_KINDS;
export type StateOf<K extends X402Kind> = (typeof X402_KINDS)[K]['states'][number];
export type AnyX402State = StateOf<X402Kind>;

export const isX402Kind = (v: string): v is X402Kind => Object.hasOwn(X402_KINDS, v);

/**
 * Whether a running workflow of `kind` in `state` may be stuck: a known state that is non-terminal
 * and not patient, or one in which it awaits an operator.
 */
export function mayBeStuck(kind: string, state: string): boolean {
  if (!isX402Kind(kind)) return false;
  const k = X402_KINDS[kind] as {
    states: readonly string[];
    terminal: readonly string[];
    patient: readonly string[];
    awaitsOperator?: readonly string[];
  };
  if (k.awaitsOperator?.includes(state)) return true;
  return k.states.includes(state) && !k.terminal.includes(state) && !k.patient.includes(state);
}

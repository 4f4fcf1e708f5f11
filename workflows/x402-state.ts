import { defineSignal, patched, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { X402Stuck, X402State } from '../src/temporal/search-attributes';
import type { StateOf, X402Kind } from '../src/temporal/states';

/** Sent by the stuck scan (activities/stuck.ts) to a workflow past STUCK_AFTER_SECONDS in a non-terminal state. */
export const markStuckSignal = defineSignal('markStuck');

/**
 * The state helper of every x402 workflow (call it first, before any await): returns `move(state)`,
 * which upserts `X402State`, typed against the kind's states in src/temporal/states.ts, and handles
 * `markStuck` by setting `X402Stuck=true` (only a workflow can upsert its own attributes). The next
 * move removes the mark: a workflow that moves on is no longer stuck where it was.
 *
 * Replay safety: histories without a `markStuck` signal replay exactly as before (the handler adds
 * no command, the move's upsert is the same command). A signal that an older worker received without
 * a handler (rolling deploy) must not produce an upsert on replay, hence `patched` in the handler.
 */
export function x402States<K extends X402Kind>(_kind: K): (state: StateOf<K>) => void {
  let stuck = false;
  setHandler(markStuckSignal, () => {
    if (stuck || !patched('x402-mark-stuck')) return;
    stuck = true;
    upsertSearchAttributes([{ key: X402Stuck, value: true }]);
  });
  return (state) => {
    upsertSearchAttributes(
      stuck
        ? [
            { key: X402State, value: state },
            { key: X402Stuck, value: null },
          ]
        : [{ key: X402State, value: state }],
    );
    stuck = false;
  };
}

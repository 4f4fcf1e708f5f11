import { condition, log, patched, upsertMemo } from '@temporalio/workflow';

/**
 * How long a sent transaction may stay without a proven outcome before its workflow waits in
 * `needs_review` (docs/security.md "Failure model"), unless the input says (`parkAfterMs`; the API's
 * SETTLE_PARK_AFTER_MS for settlements). The confirmation goes on meanwhile.
 */
export const PARK_AFTER_MS = 15 * 60_000;

/** Patch id of parking: histories from before it waited with no timer. */
export const PARK_UNPROVEN_PATCH = 'park-unproven-v1';

/** Memo field of a parked workflow: why, and since when (workflow time). */
export const PARKED_MEMO = 'parked';

/**
 * Awaits the confirmation `confirm` starts. Past `parkAfterMs` without its outcome (no receipt the
 * relayer could prove: a provider failing, a replica lagging, fees at the ceiling), calls `park` (the
 * workflow's move to `needs_review`, flagged for operators), writes the reason in memo `parked`, and
 * goes on waiting: the relayer keeps re-sending the recorded bytes and signs nothing new without
 * proof. `confirm` is started before the patch marker, as histories from before parking have it.
 */
export async function confirmOrPark<T>(
  confirm: () => Promise<T>,
  what: string,
  parkAfterMs: number | undefined,
  park: () => void,
): Promise<T> {
  const confirming = confirm();
  if (!patched(PARK_UNPROVEN_PATCH)) return confirming;
  let done = false;
  const outcome = confirming.finally(() => (done = true));
  outcome.catch(() => undefined); // awaited below
  const after = parkAfterMs ?? PARK_AFTER_MS;
  if (!(await condition(() => done, after))) {
    const reason = `no proven outcome for ${what} within ${Math.round(after / 1000)} s of its submission; the relayer keeps re-sending it and signs nothing new without proof`;
    park();
    parkedFor(what, reason);
  }
  return outcome;
}

/** Writes why the workflow waits in `needs_review` (memo `parked`) and logs it; the caller moved the state. */
export function parkedFor(what: string, reason: string): void {
  upsertMemo({ [PARKED_MEMO]: { reason, at: new Date().toISOString() } });
  log.warn(`${what} parked for review`, { reason });
}

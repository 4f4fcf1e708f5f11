import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { X402State, X402Stuck } from '../../src/temporal/search-attributes';

/**
 * Helpers of the mocked-activity workflow tests (test/workflows/*.test.ts): mocked activities that
 * record each call with its arguments, and what a workflow showed operators (its X402State moves).
 */
export interface ActivityCall {
  name: string;
  args: unknown[];
}

type Impl = (...args: any[]) => unknown;

/**
 * Wraps each stand-in so that every call (each attempt, retries included) is appended to `calls`
 * with its arguments, in the order the worker ran them.
 */
export function recorded<A extends Record<string, Impl>>(impls: A) {
  const calls: ActivityCall[] = [];
  const activities = Object.fromEntries(
    Object.entries(impls).map(([name, f]) => [
      name,
      async (...args: unknown[]) => {
        calls.push({ name, args });
        return f(...args);
      },
    ]),
  ) as unknown as { [K in keyof A]: (...args: Parameters<A[K]>) => Promise<Awaited<ReturnType<A[K]>>> };
  return {
    calls,
    activities,
    /** The activities' names in call order. */
    names: () => calls.map((c) => c.name),
    /** The arguments of each call of `name`. */
    argsOf: (name: keyof A & string) => calls.filter((c) => c.name === name).map((c) => c.args),
  };
}

const { EventType } = temporal.api.enums.v1;

/** The values a workflow upserted into `X402State` (and `X402Stuck`, where set), in history order. */
export async function upsertedStates(handle: WorkflowHandle): Promise<string[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  const out: string[] = [];
  for (const e of events) {
    if (e.eventType !== EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES) continue;
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {};
    const state = fields[X402State.name]?.data;
    if (state) out.push(JSON.parse(Buffer.from(state).toString('utf8')) as string);
    const stuck = fields[X402Stuck.name]?.data;
    if (stuck && stuck.length > 0) out.push(`${X402Stuck.name}=${Buffer.from(stuck).toString('utf8')}`);
  }
  return out;
}

/** Polls the workflow's `X402State` until it is `state` (30 s at most); returns the last value seen. */
export async function untilState(handle: WorkflowHandle, state: string): Promise<string | undefined> {
  let seen: string | undefined;
  for (const until = Date.now() + 30_000; Date.now() < until;) {
    seen = (await handle.describe()).typedSearchAttributes.get(X402State);
    if (seen === state) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return seen;
}

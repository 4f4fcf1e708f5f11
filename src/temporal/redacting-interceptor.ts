import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { redactError, redactUrls } from '../observability/redact';

/** The most of an activity error's message and stack that reaches history and the worker's log. */
const MAX_TEXT = 4_000;

/**
 * Activity errors become failure messages and stacks in workflow history, which operators read in
 * the UI, and the SDK logs each failed attempt with the whole error object. viem's errors quote the
 * RPC URL they failed on, often with a provider key in it, and carry the request, its body and a cause
 * chain in properties of their own: one can be larger than Temporal accepts in a failure ("Failure
 * exceeds size limit", and the operator no longer sees why an activity waits). So every activity
 * (local ones included) fails with URLs cut to their origin (src/observability/redact.ts), and an error
 * that is not a Temporal failure leaves as an ApplicationFailure of its own name (the failure's type, as before, so
 * retry policies match the same), its message and stack redacted and bounded, with no other property.
 */
export class RedactingActivityInbound implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      throw plainFailure(err);
    }
  }
}

/** `err` as a small failure that names no secret (see RedactingActivityInbound), down its cause chain. */
export function plainFailure(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error) || depth > 5) return err;
  if (err instanceof ApplicationFailure) {
    // Ours, e.g. ApplicationFailure.fromError(viemError): the same failure over a plain cause.
    const cause = err.cause === undefined ? undefined : plainFailure(err.cause, depth + 1);
    if (cause === err.cause) return redactError(err);
    const failure = ApplicationFailure.create({
      message: bounded(redactUrls(err.message)),
      type: err.type ?? undefined,
      nonRetryable: err.nonRetryable ?? undefined,
      details: err.details ?? undefined,
      nextRetryDelay: err.nextRetryDelay ?? undefined,
      category: err.category ?? undefined,
      cause: cause as Error,
    });
    failure.stack = bounded(redactUrls(err.stack ?? ''));
    return failure;
  }
  if (err instanceof TemporalFailure) return redactError(err);
  const failure = ApplicationFailure.create({ message: bounded(redactUrls(err.message)), type: err.name });
  failure.stack = bounded(redactUrls(err.stack ?? ''));
  return failure;
}

const bounded = (text: string) =>
  text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}… (${text.length - MAX_TEXT} more characters)` : text;

export const redactingActivityInterceptors = () => ({ inbound: new RedactingActivityInbound() });

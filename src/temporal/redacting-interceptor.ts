import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { redactError } from '../observability/redact';

/**
 * Activity errors become failure messages and stacks in workflow history, which operators read in
 * the UI. viem's errors quote the RPC URL they failed on, often with a provider key in it: every
 * activity (local ones included) fails with URLs cut to their origin (src/observability/redact.ts).
 */
export class RedactingActivityInbound implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      throw redactError(err);
    }
  }
}

export const redactingActivityInterceptors = () => ({ inbound: new RedactingActivityInbound() });

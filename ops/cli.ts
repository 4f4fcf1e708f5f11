import { parseArgs } from 'node:util';
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type Client,
  type WorkflowExecutionInfo,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { ConfigError, loadConfig } from '../src/config';
import { connectTemporal } from '../src/temporal/client';
import { X402Kind, X402Network, X402Payer, X402State } from '../src/temporal/search-attributes';
import {
  abandonBridgeLegUpdate,
  rebroadcastUpdate,
  refundChargeUpdate,
  refundTopUpUpdate,
  replaceUpdate,
  retryDepositUpdate,
  retryMintUpdate,
  type OperatorDecision,
} from '../workflows/operator-actions';

/**
 * `npm run ops -- <command>`: the operator's tool for payments that wait for a human (README "For
 * operators"). It connects like every Temporal client of the service (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, mTLS or API key) and acts only through the workflows' typed updates, whose
 * validators refuse a wrong state or missing operator/reason before anything enters history.
 *
 * Exit codes: 0 done, 1 usage or connection error, 2 refused (validator or the action itself),
 * 3 accepted but not finished within --wait (it goes on; run `list` or describe it later).
 */
const USAGE = `usage: npm run ops -- <command> [options]
  list [--kind topup] [--state needs_review] [--older-than <minutes>]
      running payments by X402Kind/X402State (default: every kind in needs_review)
  retry-deposit --workflow-id <id> --operator <who> --reason <why> [--wait <seconds>]
      top-up in needs_review: run its bridge leg again and deposit what arrives on Base
  refund --workflow-id <id> --operator <who> --reason <why> [--wait <seconds>]
      top-up in needs_review: refund the payer on Base (payee and amount from our records);
      chat or media refund in needs_review (its transaction reverted): send the refund again
  retry-mint --workflow-id <id> --operator <who> --reason <why> [--wait <seconds>]
      cross-chain settlement in needs_review: run its bridge leg again (mint and pay the seller once)
  abandon-bridge --workflow-id <id> --operator <who> --reason <why> [--wait <seconds>]
      cross-chain settlement in needs_review: abandon its bridge leg and refund the payer the gross
      amount on the source network from the revenue wallet (payee and amount from our records); the
      leg's message is then delivered on the destination to the treasury (BRIDGE_TREASURY_ADDRESS)
  rebroadcast --workflow-id <id> --operator <who> --reason <why>
      settlement in submitted: send its recorded transaction again (same bytes)
  replace --workflow-id <id> --operator <who> --reason <why>
      settlement in submitted: replace its transaction now (same nonce, fees +12.5%)`;

/** One command per operator action: the update it sends. */
const ACTIONS: Record<string, UpdateDefinition<unknown, [OperatorDecision]>> = {
  'retry-deposit': retryDepositUpdate,
  refund: refundTopUpUpdate,
  'retry-mint': retryMintUpdate,
  'abandon-bridge': abandonBridgeLegUpdate,
  rebroadcast: rebroadcastUpdate,
  replace: replaceUpdate,
};

export const EXIT = { ok: 0, usage: 1, refused: 2, pending: 3 } as const;

class UsageError extends Error {}

export async function main(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'workflow-id': { type: 'string' },
      operator: { type: 'string' },
      reason: { type: 'string' },
      kind: { type: 'string' },
      state: { type: 'string' },
      'older-than': { type: 'string' },
      wait: { type: 'string', default: '300' },
    },
  });
  const [command] = positionals;
  if (command !== 'list' && !(command in ACTIONS)) throw new UsageError(command ? `unknown command ${command}` : 'no command');

  const config = loadConfig();
  out(`connecting to Temporal at ${config.TEMPORAL_ADDRESS} (namespace ${config.TEMPORAL_NAMESPACE})`);
  const client = await connectTemporal(config);
  try {
    if (command === 'list') return await list(client, values, out);
    const workflowId = required(values['workflow-id'], '--workflow-id');
    const decision = { operator: required(values.operator, '--operator'), reason: required(values.reason, '--reason') };
    const waitMs = Number(values.wait) * 1000;
    if (!Number.isFinite(waitMs) || waitMs < 0) throw new UsageError('--wait takes seconds');
    return await act(client, workflowId, command, decision, waitMs, out);
  } finally {
    await client.connection.close();
  }
}

function required(v: string | undefined, flag: string): string {
  if (!v?.trim()) throw new UsageError(`${flag} is required`);
  return v;
}

/** Visibility values are quoted; a quote inside would end the literal. */
function literal(v: string): string {
  if (!/^[\w:.-]+$/.test(v)) throw new UsageError(`not a valid value: ${v}`);
  return `'${v}'`;
}

async function list(client: Client, o: { kind?: string; state?: string; 'older-than'?: string }, out: (line: string) => void) {
  const clauses = ['ExecutionStatus = "Running"', `X402State = ${literal(o.state ?? 'needs_review')}`];
  if (o.kind) clauses.push(`X402Kind = ${literal(o.kind)}`);
  if (o['older-than'] !== undefined) {
    const minutes = Number(o['older-than']);
    if (!Number.isFinite(minutes) || minutes < 0) throw new UsageError('--older-than takes minutes');
    clauses.push(`StartTime < "${new Date(Date.now() - minutes * 60_000).toISOString()}"`);
  }
  const query = clauses.join(' AND ');
  out(`query: ${query}`);
  let n = 0;
  for await (const w of client.workflow.list({ query })) {
    out(row(w));
    n++;
  }
  out(`${n} workflow(s)`);
  return EXIT.ok;
}

function row(w: WorkflowExecutionInfo): string {
  const a = w.typedSearchAttributes;
  return [w.workflowId, a.get(X402Kind), a.get(X402State), a.get(X402Network), a.get(X402Payer), w.startTime.toISOString()].join('\t');
}

async function act(
  client: Client,
  workflowId: string,
  command: string,
  decision: OperatorDecision,
  waitMs: number,
  out: (line: string) => void,
): Promise<number> {
  const handle = client.workflow.getHandle(workflowId);
  const stateOf = async () => (await handle.describe()).typedSearchAttributes.get(X402State);
  const described = await handle.describe();
  const state = described.typedSearchAttributes.get(X402State);
  if (described.status.name !== 'RUNNING') {
    out(`refused: ${workflowId} is ${described.status.name.toLowerCase()} (state ${state}): it waits for no action`);
    return EXIT.refused;
  }
  out(`${workflowId} is ${state}; sending ${command} (operator ${decision.operator}: ${decision.reason})`);
  // `refund` is the top-up's update, or a chat or media refund's own (X402Kind refund).
  const definition =
    command === 'refund' && described.typedSearchAttributes.get(X402Kind) === 'refund' ? refundChargeUpdate : ACTIONS[command];
  let update;
  try {
    update = await handle.startUpdate(definition, { args: [decision], waitForStage: WorkflowUpdateStage.ACCEPTED });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      out(`refused: ${err.cause?.message ?? err.message}`);
      return EXIT.refused;
    }
    throw err;
  }
  out(`accepted (update ${update.updateId}); waiting up to ${waitMs / 1000} s for the outcome`);

  let last = '';
  const progress = setInterval(() => {
    stateOf().then(
      (s) => s && s !== last && out(`  ${workflowId}: ${(last = s)}`),
      () => undefined,
    );
  }, 1000);
  let timer: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      update.result(),
      new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), waitMs))),
    ]);
    if (outcome === 'pending') {
      out(`still running after ${waitMs / 1000} s: the action goes on; check it with list or the Temporal UI`);
      return EXIT.pending;
    }
    out(`done: ${JSON.stringify(outcome)}`);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      out(`refused: ${err.cause?.message ?? err.message}`);
      return EXIT.refused;
    }
    throw err;
  } finally {
    clearInterval(progress);
    clearTimeout(timer);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      if (err instanceof UsageError) console.error(`${err.message}\n${USAGE}`);
      else if (err instanceof WorkflowNotFoundError) console.error(`no such workflow: ${err.workflowId}`);
      else if (err instanceof ConfigError) console.error(err.message);
      else console.error(`ops failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(EXIT.usage);
    },
  );
}

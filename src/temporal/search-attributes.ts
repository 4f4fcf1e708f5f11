/**
 * The custom search attributes every x402 workflow carries (DESIGN §1), so operators can find stuck
 * work in the Temporal UI. Registered at dev-server start (`--search-attribute`) and idempotently at
 * worker start on other clusters (`registerSearchAttributes`).
 *
 * Workflow code may import the keys: at runtime this module only loads `@temporalio/common`, which is
 * safe in the workflow sandbox (the client import below is type-only).
 */
import type { Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
// Not re-exported from the package index, but exported for exactly this purpose (registering attributes).
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import type { StateOf, X402Kind as Kind } from './states';

/** A kind of `X402_KINDS` (src/temporal/states.ts): settle | bridge | permit | topup | media | refund | withdrawal */
export const X402Kind = defineSearchAttributeKey('X402Kind', SearchAttributeType.KEYWORD);
/** Network id from the network table, e.g. `base-sepolia`. */
export const X402Network = defineSearchAttributeKey('X402Network', SearchAttributeType.KEYWORD);
/** Payer address, lower-case hex (or base58 on Solana). */
export const X402Payer = defineSearchAttributeKey('X402Payer', SearchAttributeType.KEYWORD);
/** The workflow's current state (one of its kind's states in src/temporal/states.ts); upserted as it moves. */
export const X402State = defineSearchAttributeKey('X402State', SearchAttributeType.KEYWORD);
/** Organization id the work belongs to. */
export const X402Organization = defineSearchAttributeKey('X402Organization', SearchAttributeType.KEYWORD);

/**
 * Set (true) by the workflow itself when the stuck scan signals it (`markStuck`), removed at its next
 * state change; `X402Stuck=true` lists the payments past STUCK_AFTER_SECONDS in a non-terminal state.
 */
export const X402Stuck = defineSearchAttributeKey('X402Stuck', SearchAttributeType.BOOL);

export const X402_SEARCH_ATTRIBUTES = [X402Kind, X402Network, X402Payer, X402State, X402Organization, X402Stuck] as const;

/** Payers are searched lower-case when hex (EVM); base58 (Solana) is case-sensitive and kept as is. */
export const searchablePayer = (payer: string) => (payer.startsWith('0x') ? payer.toLowerCase() : payer);

/** The search attributes a workflow starts with; every start goes through here, so values are normalised once. */
export function x402SearchAttributes<K extends Kind>(a: {
  kind: K;
  network: string;
  payer: string;
  state: StateOf<K>;
  organization: string;
}) {
  return [
    { key: X402Kind, value: a.kind },
    { key: X402Network, value: a.network },
    { key: X402Payer, value: searchablePayer(a.payer) },
    { key: X402State, value: a.state },
    { key: X402Organization, value: a.organization },
  ];
}

/** The CLI's spelling of each type for `--search-attribute NAME=Type`. */
const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** `['--search-attribute', 'X402Kind=Keyword', ...]` for `temporal server start-dev`. */
export function searchAttributeCliFlags(): string[] {
  return X402_SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=${CLI_TYPE_NAMES[key.type]}`]);
}

const GRPC_ALREADY_EXISTS = 6;

/**
 * Registers the attributes on an existing cluster's namespace; a no-op for those already present.
 * Throws if one exists with a different type (that needs an operator, not a silent fix).
 * Returns the names it added.
 */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = customAttributes ?? {};
  const missing: Record<string, number> = {};
  for (const key of X402_SEARCH_ATTRIBUTES) {
    const wanted = encodeSearchAttributeIndexedValueType(key.type)!;
    const have = existing[key.name];
    if (have === undefined || have === null) missing[key.name] = wanted;
    else if (have !== wanted) {
      throw new Error(`search attribute ${key.name} exists in namespace ${namespace} with type ${have}, expected ${key.type}`);
    }
  }
  if (Object.keys(missing).length === 0) return [];
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  } catch (err) {
    // Older servers reject the whole call when another worker registered them in the meantime.
    if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
  }
  return Object.keys(missing);
}

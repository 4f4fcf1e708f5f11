import { z } from 'zod';

/**
 * Wire format of POST /v1/permit (spec "POST /v1/permit"), its error reasons and their statuses.
 * Parsing normalises what the spec lets clients vary: numbers become decimal strings, `r`/`s` get
 * their 0x prefix, empty optional fields count as absent. See docs/decisions/permit.md.
 */

/** The spec's permit error reasons with their HTTP statuses, plus our pending answer (202). */
export const PERMIT_REASON_STATUS = {
  invalid_request: 400,
  unsupported_network: 400,
  network_not_configured: 400,
  invalid_signature: 400,
  permit_execution_failed: 500,
  permit_pending: 202,
} as const;
export type PermitReason = keyof typeof PERMIT_REASON_STATUS;

export const permitStatusFor = (reason: string): number =>
  Object.hasOwn(PERMIT_REASON_STATUS, reason) ? PERMIT_REASON_STATUS[reason as PermitReason] : 500;

/**
 * Permit response (spec): `{success, transaction, network, errorReason?}`. `transaction` is '' on
 * every error. `message` (ours) says in words what went wrong; clients should branch on errorReason.
 */
export interface PermitResponse {
  success: boolean;
  transaction: string;
  network: string;
  errorReason?: string;
  message?: string;
}

const UINT256_MAX = (1n << 256n) - 1n;
const ZERO_ADDRESS = /^0x0{40}$/;

/** 'is required' for a missing field, `otherwise` for a value of the wrong type. */
const requiredOr = (otherwise: string) => (iss: { input: unknown }) => (iss.input === undefined ? 'is required' : otherwise);

/** Any spelling of an address (as on settle); the zero address is refused where it cannot be meant. */
const ADDRESS_MESSAGE = 'must be a 0x-prefixed 20-byte hex address';
const addressSchema = z.string({ error: requiredOr(ADDRESS_MESSAGE) }).regex(/^0x[a-fA-F0-9]{40}$/, ADDRESS_MESSAGE);

/** `null` and `''` count as "not given" for the optional signature and token fields. */
const absent = (v: unknown) => (v === null || v === '' ? undefined : v);

/**
 * A uint256 as a decimal string. JSON numbers are accepted when they are exact (safe, non-negative
 * integers) and coerced to their decimal string; larger numbers have already lost precision.
 */
const uintField = z.preprocess(
  (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? String(v) : v),
  z
    .string({ error: requiredOr('must be a decimal string (or a whole number up to 2^53)') })
    .max(100, 'is too long')
    .regex(/^[0-9]+$/, 'must match ^[0-9]+$')
    .transform((s) => BigInt(s))
    .refine((n) => n <= UINT256_MAX, 'exceeds uint256')
    .transform((n) => n.toString()),
);

/** 32-byte hex, with or without 0x; normalised to 0x-prefixed lower case. */
const word = z
  .string()
  .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32-byte hex, with or without 0x')
  .transform((s) => `0x${s.replace(/^0x/, '').toLowerCase()}` as `0x${string}`);

export const permitRequestSchema = z
  .object({
    network: z
      .string({ error: requiredOr('must be a string') })
      .min(1, 'is required')
      .max(64),
    tokenAddress: z.preprocess(absent, addressSchema.optional()),
    owner: addressSchema,
    /** Forwarded only: the on-chain permit names the facilitator contract as spender. */
    spender: addressSchema,
    value: uintField,
    deadline: uintField,
    /** 0 counts as missing (spec). */
    v: z.preprocess(
      absent,
      z
        .number({ error: 'must be an integer 0..255' })
        .int('must be an integer 0..255')
        .min(0, 'must be 0..255')
        .max(255, 'must be 0..255')
        .optional()
        .transform((v) => (v === 0 ? undefined : v)),
    ),
    r: z.preprocess(absent, word.optional()),
    s: z.preprocess(absent, word.optional()),
    signature: z.preprocess(
      absent,
      z
        .string()
        .regex(/^0x[a-fA-F0-9]+$/, 'must match ^0x[a-fA-F0-9]+$')
        .refine((s) => s.length === 2 + 130, 'must be 65 bytes')
        .transform((s) => s.toLowerCase() as `0x${string}`)
        .optional(),
    ),
    recipient: addressSchema.refine((a) => !ZERO_ADDRESS.test(a), 'must not be the zero address'),
  })
  .superRefine((b, ctx) => {
    const split = b.v !== undefined || b.r !== undefined || b.s !== undefined;
    if (split && b.signature !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['signature'], message: 'provide v, r, s or signature, not both' });
    } else if (!split && b.signature === undefined) {
      ctx.addIssue({ code: 'custom', path: ['signature'], message: 'a signature is required: v, r and s, or signature' });
    }
  });

export type PermitRequest = z.infer<typeof permitRequestSchema>;

export type ParsedPermit = { ok: true; request: PermitRequest } | { ok: false; message: string };

/** Parses a request body; a failure names each bad field, as our other 400 messages do. */
export function parsePermitRequest(body: unknown): ParsedPermit {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, message: 'request body must be a JSON object' };
  }
  const result = permitRequestSchema.safeParse(body);
  if (result.success) return { ok: true, request: result.data };
  const problems = result.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message));
  return { ok: false, message: `invalid request body: ${problems.join('; ')}` };
}

/** The request's `network` when it is a string (echoed on every error), else ''. */
export const rawNetworkOf = (body: unknown): string => {
  const n = (body as { network?: unknown } | null | undefined)?.network;
  return typeof n === 'string' ? n : '';
};

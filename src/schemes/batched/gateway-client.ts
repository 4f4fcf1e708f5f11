import type { Config } from '../../config';
import type { EvmNetwork } from '../../chains/networks';
import { readBoundedText } from '../../upstream/bounded-body';
import { redactUrls } from '../../observability/redact';

/**
 * The upstream batching gateway's HTTP API (Circle Gateway nanopayments: POST /v1/x402/verify,
 * POST /v1/x402/settle, GET /v1/x402/supported). Testnets go to GATEWAY_API_URL_TESTNET, mainnets
 * to GATEWAY_API_URL. Every call is bounded by GATEWAY_TIMEOUT_MS.
 */

/** The upstream could not be asked or gave no usable answer (down, timeout, 5xx, not JSON). */
export class GatewayUnavailable extends Error {}

type GatewayConfig = Pick<Config, 'GATEWAY_API_URL' | 'GATEWAY_API_URL_TESTNET' | 'GATEWAY_TIMEOUT_MS'>;

export const gatewayBaseUrl = (config: GatewayConfig, testnet: boolean) =>
  (testnet ? config.GATEWAY_API_URL_TESTNET : config.GATEWAY_API_URL).replace(/\/+$/, '');

/** Settle and verify answers are a few hundred bytes. */
const MAX_GATEWAY_ANSWER_BYTES = 1024 * 1024;

async function call(config: GatewayConfig, url: string, init: RequestInit): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(config.GATEWAY_TIMEOUT_MS) });
  } catch (err) {
    throw new GatewayUnavailable(`upstream gateway unreachable: ${redactUrls((err as Error).message)}`);
  }
  const text = await readBoundedText(res, MAX_GATEWAY_ANSWER_BYTES).catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new GatewayUnavailable(`upstream gateway answered ${res.status} without JSON`);
  }
  if (res.status >= 500) throw new GatewayUnavailable(`upstream gateway answered ${res.status}`);
  return { status: res.status, body };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * POSTs a settle or verify request. A 2xx/4xx answer that carries the outcome field (`success` for
 * settle, `isValid` for verify) is the upstream's verdict and is returned whatever its status;
 * anything else throws GatewayUnavailable.
 */
export async function forwardToGateway(
  config: GatewayConfig,
  network: EvmNetwork,
  action: 'settle' | 'verify',
  body: { paymentPayload: unknown; paymentRequirements: unknown },
): Promise<Record<string, unknown>> {
  const url = `${gatewayBaseUrl(config, network.testnet)}/v1/x402/${action}`;
  const out = await call(config, url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const field = action === 'settle' ? 'success' : 'isValid';
  if (!isObject(out.body) || typeof out.body[field] !== 'boolean') {
    throw new GatewayUnavailable(`upstream gateway answered ${out.status} without a ${action} result`);
  }
  return out.body;
}

/** GET /v1/x402/supported of the testnet or mainnet gateway, passed through as it came. */
export async function gatewaySupported(config: GatewayConfig, testnet: boolean): Promise<unknown> {
  const out = await call(config, `${gatewayBaseUrl(config, testnet)}/v1/x402/supported`, {
    method: 'GET',
    headers: { accept: 'application/json' },
  });
  if (out.status !== 200) throw new GatewayUnavailable(`upstream gateway answered ${out.status}`);
  return out.body;
}

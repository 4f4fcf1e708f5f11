/**
 * x402-fetch ships its types as .d.mts only, which `moduleResolution: node` cannot see; this is the
 * part of its CommonJS API the tests use (x402-fetch@1.2.0, dist/cjs/index.js).
 */
declare module 'x402-fetch' {
  /** Pays a 402 answer once (x402 v1, `exact`) and repeats the request with X-PAYMENT. */
  export function wrapFetchWithPayment(
    fetch: (input: any, init?: any) => Promise<Response>,
    walletClient: unknown,
    maxValue?: bigint,
  ): (input: any, init?: any) => Promise<Response>;
  /** The JSON of a base64 X-PAYMENT-RESPONSE header. */
  export function decodeXPaymentResponse(header: string): {
    success: boolean;
    transaction: string;
    network: string;
    payer: string;
    errorReason?: string;
  };
}

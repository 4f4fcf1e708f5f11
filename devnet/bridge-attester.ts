import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  concat,
  createPublicClient,
  encodeAbiParameters,
  http,
  keccak256,
  parseEventLogs,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAddress, sign, serializeSignature } from 'viem/accounts';
import { DEVNET_BRIDGE_ATTESTER_KEYS, DEVNET_BRIDGE_FEE_BPS, DEVNET_BRIDGE_SIGNATURE_THRESHOLD } from '../src/chains/devnet-addresses';
import { CCTP_FINALITY_FAST, CCTP_FINALITY_FINALIZED, decodeBurnMessage, encodeBurnMessage } from '../src/chains/evm/bridge';
import { z } from 'zod';
import { buildNetworkTable } from '../src/chains/networks';
import { DEVNET_BRIDGE_ATTESTATION_URL } from '../src/config';
import { messageTransmitterV2Abi } from '../src/chains/evm/abi';

const attesterControls = z
  .object({
    held: z.boolean().optional(),
    signWith: z
      .string()
      .regex(/^0x[0-9a-fA-F]{64}$/)
      .nullable()
      .optional(),
  })
  .strict();

/**
 * Double of the bridge attestation service (Circle's Iris API shape, CCTP V2):
 *
 *   GET /v2/messages/{sourceDomainId}?transactionHash=0x...
 *     200 {messages: [{message, eventNonce, attestation, cctpVersion, status, decodedMessage}]}
 *         status `pending_confirmations` (attestation "PENDING", the message as emitted) until the
 *         burn is `delayMs` old, then `complete`: the message as the service completes it (nonce
 *         assigned, executed finality = the requested one, `feeExecuted` as Circle charges it: a
 *         fast burn (minFinalityThreshold <= 1000) `feeBps` of the amount capped at `maxFee`, a
 *         standard one nothing) with its attestation: one 65-byte signature over keccak256 of that
 *         message per attester key, concatenated in increasing signer-address order (as Circle's
 *         MessageTransmitterV2 requires; by default DEVNET_BRIDGE_SIGNATURE_THRESHOLD of the devnet keys)
 *     404 {error} when the transaction is not (yet) known or emitted no burn message
 *     400 {error} for an unknown domain or a malformed hash
 *
 *   GET /v2/burn/USDC/fees/{sourceDomainId}/{destinationDomainId}
 *     200 [{finalityThreshold: 1000, minimumFee: feeBps}, {finalityThreshold: 2000, minimumFee: 0}]:
 *         the fee in basis points it executes at each finality (fast, standard), what a burn's maxFee
 *         must cover (Circle's standard transfers are free)
 *     400 {error} for an unknown or equal pair of domains
 *
 * It keeps real state: burns are read from the source chain's receipts (the MessageTransmitterV2's
 * MessageSent logs); the nonce it assigns is derived from (domain, transaction, log index), so every
 * answer for one burn carries the same nonce. Devnet controls (not part of the real API): `hold()` /
 * `release()` withhold every attestation, so a test can stop a worker between burn and mint;
 * `attestWith(keys)` signs with other keys (an attestation the transmitter refuses: an unknown
 * signer, or fewer signatures than its threshold); `setFastFee(bps)` changes the fast fee from now on,
 * `feesDown(true)` answers the fees route 503 (an outage), and `feeRequests` lists the fees routes asked.
 * With `controls`, hold and the signing keys are also served over HTTP for a double that runs in
 * another process (`npm start`, `npm run cluster`):
 *   PUT /devnet/controls {"held"?: boolean, "signWith"?: "0x<private key>" | null}  (a key: sign with it
 *       alone, which the transmitter refuses below its threshold; null: the configured keys again)
 *     200 {"held", "signsWithConfiguredKey"}; 400 {error} for anything else
 * The real service has no such route, and the double is never run in production (the stack refuses it).
 */
export interface AttesterChain {
  rpcUrl: string;
  /** The source chain's MessageTransmitterV2 (it emits MessageSent). */
  transmitter: Address;
}

export interface BridgeAttesterOptions {
  /**
   * CCTP domain -> source chain(s) RPC URL and messenger address. A domain may list several chains
   * (the devnet runs e.g. optimism-sepolia and `optimism` under domain 2): a transaction is looked up
   * on each until one has the burn.
   */
  chains: Record<number, AttesterChain | AttesterChain[]>;
  /** The keys that sign each attestation (default: the first DEVNET_BRIDGE_SIGNATURE_THRESHOLD devnet attester keys). */
  attesterKeys?: readonly Hex[];
  /** How long after the attester first sees a burn it stays `pending_confirmations`. */
  delayMs?: number;
  /** The fast transfer fee it executes in bps (default DEVNET_BRIDGE_FEE_BPS), capped at each message's maxFee; standard is free. */
  feeBps?: number;
  host?: string;
  port?: number;
  held?: boolean;
  /** Also serve PUT /devnet/controls (off by default: only a devnet launcher turns it on). */
  controls?: boolean;
}

export interface BridgeAttester {
  url: string;
  hold(): void;
  release(): void;
  /** Signs from now on with these keys (e.g. an attestation the transmitter rejects); none: the configured ones again. */
  attestWith(keys?: Hex | readonly Hex[]): void;
  /** Number of `complete` answers served so far (a test can see the worker polled). */
  readonly served: number;
  /** The fast fee (bps, may be fractional) it answers and executes from now on. */
  setFastFee(bps: number): void;
  /** While true, the fees route answers 503. */
  feesDown(down: boolean): void;
  /** Paths of every fees request received (answered or not), in order. */
  readonly feeRequests: readonly string[];
  stop(): Promise<void>;
}

export async function startBridgeAttester(opts: BridgeAttesterOptions): Promise<BridgeAttester> {
  const configured = opts.attesterKeys ?? DEVNET_BRIDGE_ATTESTER_KEYS.slice(0, DEVNET_BRIDGE_SIGNATURE_THRESHOLD);
  let keys: readonly Hex[] = configured;
  const delayMs = opts.delayMs ?? 0;
  let feeBps = opts.feeBps ?? DEVNET_BRIDGE_FEE_BPS;
  let feesAreDown = false;
  const feeRequests: string[] = [];
  /** The fast fee of `amount` (feeBps may be fractional, as Circle's are), rounded down, capped at `maxFee`. */
  const fastFee = (amount: bigint, maxFee: bigint) => {
    const fee = (amount * BigInt(Math.round(feeBps * 100))) / 1_000_000n;
    return fee > maxFee ? maxFee : fee;
  };
  let held = opts.held ?? false;
  let served = 0;
  const firstSeen = new Map<string, number>();
  const clients = new Map<number, { client: PublicClient; transmitter: string }[]>();
  for (const [domain, c] of Object.entries(opts.chains)) {
    const list = Array.isArray(c) ? c : [c];
    clients.set(
      Number(domain),
      list.map((x) => ({
        client: createPublicClient({ transport: http(x.rpcUrl, { retryCount: 0 }) }) as PublicClient,
        transmitter: x.transmitter.toLowerCase(),
      })),
    );
  }
  /** The transmitter's MessageSent logs of `hash` on the first chain of the domain that has them. */
  const burnLogs = async (domain: number, hash: Hex) => {
    for (const { client, transmitter } of clients.get(domain) ?? []) {
      const receipt = await client.getTransactionReceipt({ hash }).catch(() => null);
      const logs = receipt
        ? parseEventLogs({ abi: messageTransmitterV2Abi, logs: receipt.logs, eventName: 'MessageSent' }).filter(
            (l) => l.address.toLowerCase() === transmitter,
          )
        : [];
      if (logs.length > 0) return logs;
    }
    return [];
  };

  const answer = async (domain: number, hash: string): Promise<{ status: number; body: unknown }> => {
    if (!clients.has(domain)) return { status: 400, body: { error: `unsupported source domain ${domain}` } };
    if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) return { status: 400, body: { error: 'invalid transactionHash' } };
    const logs = await burnLogs(domain, hash as Hex);
    if (logs.length === 0) return { status: 404, body: { error: 'Message hash not found' } };
    const seen = firstSeen.get(hash.toLowerCase()) ?? Date.now();
    firstSeen.set(hash.toLowerCase(), seen);
    const complete = !held && Date.now() - seen >= delayMs;
    const messages = await Promise.all(
      logs.map(async (l) => {
        const emitted = decodeBurnMessage(l.args.message);
        const nonce = keccak256(
          encodeAbiParameters([{ type: 'uint32' }, { type: 'bytes32' }, { type: 'uint256' }], [domain, hash as Hex, BigInt(l.logIndex)]),
        );
        const decoded = complete
          ? {
              ...emitted,
              nonce,
              finalityThresholdExecuted: emitted.minFinalityThreshold,
              body: {
                ...emitted.body,
                // Circle charges fast transfers only (CCTP fees: "Standard Transfers are free").
                feeExecuted: emitted.minFinalityThreshold <= CCTP_FINALITY_FAST ? fastFee(emitted.body.amount, emitted.body.maxFee) : 0n,
              },
            }
          : emitted;
        const message = complete ? encodeBurnMessage(decoded) : l.args.message;
        const attestation = complete ? await attest(message, keys) : 'PENDING';
        return {
          message,
          eventNonce: decoded.nonce,
          attestation,
          cctpVersion: 2,
          status: complete ? 'complete' : 'pending_confirmations',
          delayReason: null,
          decodedMessage: {
            sourceDomain: String(decoded.sourceDomain),
            destinationDomain: String(decoded.destinationDomain),
            nonce: decoded.nonce,
            sender: decoded.sender,
            recipient: decoded.recipient,
            destinationCaller: decoded.destinationCaller,
            minFinalityThreshold: String(decoded.minFinalityThreshold),
            finalityThresholdExecuted: String(decoded.finalityThresholdExecuted),
            messageBody: `0x${message.slice(2 + 148 * 2)}`,
            decodedMessageBody: {
              burnToken: decoded.body.burnToken,
              mintRecipient: decoded.body.mintRecipient,
              amount: decoded.body.amount.toString(),
              messageSender: decoded.body.messageSender,
              maxFee: decoded.body.maxFee.toString(),
              feeExecuted: decoded.body.feeExecuted.toString(),
              expirationBlock: decoded.body.expirationBlock.toString(),
              hookData: decoded.body.hookData,
            },
          },
        };
      }),
    );
    if (complete) served++;
    return { status: 200, body: { messages } };
  };

  const control = (req: IncomingMessage, send: (status: number, body: unknown) => void) => {
    if (req.method !== 'PUT') return send(405, { error: 'PUT {"held"?: boolean, "signWith"?: "0x<private key>" | null}' });
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      if (raw.length <= 4096) raw += chunk; // a longer body is cut, so it fails to parse
    });
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const parsed = attesterControls.safeParse(body);
      if (!parsed.success)
        return send(400, { error: 'the body must be {"held"?: boolean, "signWith"?: "0x<32-byte private key>" | null}' });
      if (parsed.data.held !== undefined) held = parsed.data.held;
      if (parsed.data.signWith !== undefined) keys = parsed.data.signWith === null ? configured : [parsed.data.signWith as Hex];
      send(200, { held, signsWithConfiguredKey: keys === configured });
    });
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://attester');
    const match = /^\/v2\/messages\/(\d+)$/.exec(url.pathname);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const fees = /^\/v2\/burn\/USDC\/fees\/(\d+)\/(\d+)$/.exec(url.pathname);
    if (req.method === 'GET' && fees) {
      feeRequests.push(url.pathname);
      if (feesAreDown) return send(503, { error: 'service unavailable' });
      const [src, dst] = [Number(fees[1]), Number(fees[2])];
      if (!clients.has(src) || !clients.has(dst) || src === dst) return send(400, { error: `unsupported domain pair ${src} -> ${dst}` });
      return send(200, [
        { finalityThreshold: CCTP_FINALITY_FAST, minimumFee: feeBps },
        { finalityThreshold: CCTP_FINALITY_FINALIZED, minimumFee: 0 },
      ]);
    }
    if (opts.controls && url.pathname === '/devnet/controls') return control(req, send);
    if (req.method !== 'GET' || !match) return send(404, { error: 'not found' });
    answer(Number(match[1]), url.searchParams.get('transactionHash') ?? '').then(
      (r) => send(r.status, r.body),
      (err) => send(500, { error: String(err instanceof Error ? err.message : err) }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    hold: () => void (held = true),
    release: () => void (held = false),
    attestWith: (other?: Hex | readonly Hex[]) =>
      void (keys = other === undefined ? configured : typeof other === 'string' ? [other] : other),
    get served() {
      return served;
    },
    setFastFee: (bps: number) => void (feeBps = bps),
    feesDown: (down: boolean) => void (feesAreDown = down),
    get feeRequests() {
      return [...feeRequests];
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Each key's signature over keccak256(message), concatenated in increasing signer-address order. */
async function attest(message: Hex, keys: readonly Hex[]): Promise<Hex> {
  const signer = (k: Hex) => BigInt(privateKeyToAddress(k));
  const sorted = [...keys].sort((a, b) => (signer(a) < signer(b) ? -1 : signer(a) > signer(b) ? 1 : 0));
  const hash = keccak256(message);
  return concat(await Promise.all(sorted.map(async (privateKey) => serializeSignature(await sign({ hash, privateKey })))));
}

/**
 * The attester's chains from the network table: every enabled network with a CCTP domain (testnet
 * and mainnet ids share domains, e.g. optimism-sepolia and `optimism` are both 2: both are listed).
 */
export function attesterChainsFrom(env: Record<string, string | undefined>): Record<number, AttesterChain[]> {
  const chains: Record<number, AttesterChain[]> = {};
  for (const n of buildNetworkTable(env).values()) {
    if (n.enabled && n.cctpDomain !== undefined && n.bridgeTransmitter && n.rpcUrls[0]) {
      (chains[n.cctpDomain] ??= []).push({ rpcUrl: n.rpcUrls[0], transmitter: n.bridgeTransmitter });
    }
  }
  return chains;
}

/** `npm start`: the double on the port of BRIDGE_ATTESTATION_URL (default 4023). */
export function startDevnetBridgeAttester(env: Record<string, string | undefined>): Promise<BridgeAttester> {
  const url = new URL(env.BRIDGE_ATTESTATION_URL || DEVNET_BRIDGE_ATTESTATION_URL);
  return startBridgeAttester({
    chains: attesterChainsFrom(env),
    host: url.hostname,
    port: Number(url.port || 80),
    delayMs: Number(env.BRIDGE_ATTESTER_DELAY_MS ?? 2000),
    controls: true,
  });
}

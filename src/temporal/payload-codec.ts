import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, ValueError, type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { ConfigError, type Config } from '../config';
import { DEVNET_KEY_ID_PREFIX, parsePayloadCodecKeys, type PayloadCodecKeys } from './codec-keys';

/**
 * The payload codec every Temporal client and worker of ours uses (docs/security.md "Forged
 * workflows"): each payload (workflow and activity inputs and results, signals, updates, queries,
 * memos, failure details, headers) is sealed with AES-256-GCM under a key from PAYLOAD_CODEC_KEYS
 * before it reaches Temporal, and opened on the way back. Decoding refuses any payload that is not
 * sealed with a configured key, so a workflow started by someone who can reach Temporal but does not
 * hold the key (the UI, the CLI, a shared cluster) fails its first workflow task in our worker: its
 * input is never read and no activity runs. Search attributes are not payloads of the codec.
 *
 * Rotation: the first key of PAYLOAD_CODEC_KEYS seals; every listed key opens. Add the new key in
 * front, roll out every process, and drop the old one once no history that needs it is retained.
 */

/** A payload this codec sealed: its encoding, and which key sealed it. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;

const utf8 = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

/**
 * The sealed plaintext is the whole payload (metadata and data) framed as JSON with base64 bytes, so
 * the encoding of the value is hidden too. The key id is authenticated (AAD): a payload cannot be
 * relabelled to another key.
 */
function frame(p: Payload): Buffer {
  const metadata = Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return Buffer.from(JSON.stringify({ metadata, data: p.data ? Buffer.from(p.data).toString('base64') : undefined }), 'utf8');
}

function unframe(b: Buffer): Payload {
  const o = JSON.parse(b.toString('utf8')) as { metadata: Record<string, string>; data?: string };
  const metadata = Object.fromEntries(Object.entries(o.metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]));
  return { metadata, ...(o.data !== undefined ? { data: new Uint8Array(Buffer.from(o.data, 'base64')) } : {}) };
}

/** Whether a payload says it was sealed by this codec (it may still fail to open). */
export const isSealed = (p: Payload): boolean => text(p.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING;

export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(private readonly keys: PayloadCodecKeys) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const id = this.keys.current;
    const key = this.keys.keys.get(id)!;
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id, 'utf8'));
      const sealed = Buffer.concat([iv, cipher.update(frame(p)), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(id) }, data: new Uint8Array(sealed) };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      // Unlike an encryption-at-rest codec, nothing plain passes: a payload we did not seal was
      // written by someone without the key (docs/security.md "Forged workflows").
      if (!isSealed(p)) {
        throw new ValueError('payload codec: refused a payload not encrypted with our key (written without PAYLOAD_CODEC_KEYS)');
      }
      const id = text(p.metadata?.[KEY_ID_METADATA]) ?? '';
      const key = this.keys.keys.get(id);
      if (!key) throw new ValueError(`payload codec: unknown key id ${JSON.stringify(id.slice(0, 40))}`);
      const data = Buffer.from(p.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('payload codec: encrypted payload too short');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAAD(Buffer.from(id, 'utf8'));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        return unframe(Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]));
      } catch {
        throw new ValueError(`payload codec: payload does not authenticate under key ${id} (tampered or another key)`);
      }
    });
  }
}

type CodecConfig = Pick<Config, 'PAYLOAD_CODEC_KEYS' | 'production'>;

/** Why this configuration may not talk to Temporal, or undefined (production needs its own codec key). */
export function payloadCodecProblem(config: CodecConfig): string | undefined {
  if (!config.production) return undefined;
  if (!config.PAYLOAD_CODEC_KEYS) return 'required in production (every Temporal client and worker seals payloads; docs/security.md)';
  const devnet = [...parsePayloadCodecKeys(config.PAYLOAD_CODEC_KEYS).keys.keys()].filter((id) => id.startsWith(DEVNET_KEY_ID_PREFIX));
  if (devnet.length) return `key id ${devnet[0]} is a devnet key (npm start generates those); production needs its own key`;
  return undefined;
}

/**
 * The data converter of every Temporal client and worker of ours: the codec when PAYLOAD_CODEC_KEYS
 * is set, none otherwise (development only: production refuses to start without it).
 */
export function temporalDataConverter(config: CodecConfig): DataConverter {
  const problem = payloadCodecProblem(config);
  if (problem) throw new ConfigError(`Invalid configuration:\n  PAYLOAD_CODEC_KEYS: ${problem}`);
  return config.PAYLOAD_CODEC_KEYS ? { payloadCodecs: [new AesGcmPayloadCodec(parsePayloadCodecKeys(config.PAYLOAD_CODEC_KEYS))] } : {};
}

import { readBoundedText } from '../upstream/bounded-body';
import type { InferenceConfig, ProviderConfig } from './config';

/** Model and template lists are small; a provider answering more is broken. */
const MAX_LIST_BYTES = 1024 * 1024;

/**
 * The live view of the configured upstream providers: model lists from each provider's
 * OpenAI-compatible `GET /models` (reused for INFERENCE_MODELS_TTL_MS; a failed probe marks the
 * provider down), templates from their source (cached INFERENCE_TEMPLATES_TTL_MS, 5 minutes by
 * default). A provider that is down is listed as `funding_only` when it can be topped up, else left out.
 */

export interface ProviderDescriptor {
  id: string;
  label: string;
  payment: 'none' | 'x402';
  status: 'available' | 'funding_only';
  capabilities: { chat: boolean; models: boolean; balance: boolean; topup: boolean };
  settlement?: { network: string; asset: string; decimals: number };
  topup?: { gatewayUrl: string; merchant: string; settlementChainId: number };
}

/**
 * The spec's descriptor of one provider and its live state: `available` while its `GET /models`
 * answers; when it does not, `funding_only` if a balance with it can still be topped up, else
 * nothing (the spec's two statuses leave no word for a provider that can do nothing: it is not listed).
 */
export function describeProvider(p: ProviderConfig, up: boolean): ProviderDescriptor | undefined {
  if (!up && !p.topup) return undefined;
  return {
    id: p.id,
    label: p.label,
    payment: p.payment ?? 'none',
    status: up ? 'available' : 'funding_only',
    capabilities: { chat: up, models: up, balance: !!p.topup, topup: !!p.topup },
    ...(p.settlement ? { settlement: p.settlement } : {}),
    ...(p.topup ? { topup: p.topup } : {}),
  };
}

export interface Template {
  name: string;
  label: string;
}

interface ProviderState {
  at: number;
  up: boolean;
  models: string[];
  error?: string;
}

export interface ModelEntry {
  id: string;
  provider: string;
  upstreamModel: string;
}

export class ProvidersUnavailable extends Error {}

export class InferenceRegistry {
  private readonly states = new Map<string, ProviderState>();
  private readonly inflight = new Map<string, Promise<ProviderState>>();
  private templates: { at: number; list: (Template & { prompt?: string })[] } | undefined;
  private templatesInflight: Promise<(Template & { prompt?: string })[]> | undefined;

  constructor(
    readonly config: InferenceConfig,
    private readonly now: () => number = Date.now,
  ) {}

  provider(id: string): ProviderConfig | undefined {
    return this.config.providers.find((p) => p.id === id);
  }

  /** Every configured provider with its live status. */
  async providers(): Promise<ProviderDescriptor[]> {
    const states = await Promise.all(this.config.providers.map((p) => this.state(p)));
    return this.config.providers.flatMap((p, i) => describeProvider(p, states[i]!.up) ?? []);
  }

  /** Models of the providers that are up, as public ids `<provider>:<upstream model>`. */
  async models(): Promise<{ models: ModelEntry[]; down: string[] }> {
    const states = await Promise.all(this.config.providers.map((p) => this.state(p)));
    const models: ModelEntry[] = [];
    const down: string[] = [];
    this.config.providers.forEach((p, i) => {
      const s = states[i]!;
      if (!s.up) down.push(p.id);
      for (const m of s.models) models.push({ id: `${p.id}:${m}`, provider: p.id, upstreamModel: m });
    });
    return { models, down };
  }

  /** Templates from their source; the last good list is served for the cache TTL. Throws ProvidersUnavailable. */
  async templateList(): Promise<(Template & { prompt?: string })[]> {
    const t = this.templates;
    if (t && this.now() - t.at < this.config.templatesTtlMs) return t.list;
    this.templatesInflight ??= this.fetchTemplates().finally(() => {
      this.templatesInflight = undefined;
    });
    try {
      return await this.templatesInflight;
    } catch (err) {
      throw new ProvidersUnavailable(`templates source unavailable: ${(err as Error).message}`);
    }
  }

  private async fetchTemplates(): Promise<(Template & { prompt?: string })[]> {
    const res = await fetch(this.config.templatesUrl, {
      headers: this.authFor(this.config.templatesUrl),
      signal: AbortSignal.timeout(this.probeTimeout()),
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const body = JSON.parse(await readBoundedText(res, MAX_LIST_BYTES)) as { data?: unknown };
    if (!Array.isArray(body.data)) throw new Error('no data array');
    const list = body.data
      .filter((t): t is { name: string; label?: string; prompt?: string } => typeof t?.name === 'string')
      .map((t) => ({
        name: t.name,
        label: typeof t.label === 'string' ? t.label : t.name,
        ...(typeof t.prompt === 'string' ? { prompt: t.prompt } : {}),
      }));
    this.templates = { at: this.now(), list };
    return list;
  }

  /** The templates source is usually one of the providers: send that provider's key with it. */
  private authFor(url: string): Record<string, string> {
    const p = this.config.providers.find((x) => url.startsWith(x.baseUrl));
    return p?.apiKey ? { authorization: `Bearer ${p.apiKey}` } : {};
  }

  private probeTimeout(): number {
    return Math.min(2000, Math.max(100, Math.floor(this.config.firstByteTimeoutMs / 5)));
  }

  private async state(p: ProviderConfig): Promise<ProviderState> {
    const s = this.states.get(p.id);
    if (s && this.now() - s.at < this.config.modelsTtlMs) return s;
    let pending = this.inflight.get(p.id);
    if (!pending) {
      pending = this.probe(p).finally(() => this.inflight.delete(p.id));
      this.inflight.set(p.id, pending);
    }
    return pending;
  }

  private async probe(p: ProviderConfig): Promise<ProviderState> {
    let state: ProviderState;
    try {
      const res = await fetch(`${p.baseUrl.replace(/\/$/, '')}/models`, {
        headers: p.apiKey ? { authorization: `Bearer ${p.apiKey}` } : {},
        signal: AbortSignal.timeout(this.probeTimeout()),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = JSON.parse(await readBoundedText(res, MAX_LIST_BYTES)) as { data?: { id?: unknown }[] };
      const models = (body.data ?? []).map((m) => m?.id).filter((id): id is string => typeof id === 'string');
      state = { at: this.now(), up: true, models };
    } catch (err) {
      state = { at: this.now(), up: false, models: [], error: (err as Error).message };
    }
    this.states.set(p.id, state);
    return state;
  }
}

const registries = new WeakMap<object, InferenceRegistry>();

/** One registry (and so one cache) per API instance, keyed by its deps object. */
export function registryFor(owner: object, config: InferenceConfig): InferenceRegistry {
  let r = registries.get(owner);
  if (!r) {
    r = new InferenceRegistry(config);
    registries.set(owner, r);
  }
  return r;
}

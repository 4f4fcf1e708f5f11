/**
 * Finds the Temporal CLI (which embeds the dev server), building it once from its Go module if needed
 * (tools/go-tools.ts): $TEMPORAL_CLI, `temporal` on PATH, <repo>/.tools/bin/temporal, else a build.
 */
import type { LogFn } from '../devnet/process';
import { TEMPORAL_CLI, cachedGoToolPath, ensureGoTool, findGoTool } from '../tools/go-tools';

/** Where the project caches its own build. */
export const cachedTemporalCliPath = (): string => cachedGoToolPath(TEMPORAL_CLI);

/** The CLI if one exists already, without building. */
export const findTemporalCli = (): string | undefined => findGoTool(TEMPORAL_CLI);

export const ensureTemporalCli = (opts: { log?: LogFn } = {}): Promise<string> => ensureGoTool(TEMPORAL_CLI, opts);

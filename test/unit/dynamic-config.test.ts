import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOW_LATENCY_DYNAMIC_CONFIG } from '../../temporal/dynamic-config';
import { devServerArgs } from '../../temporal/dev-server';

const compose = readFileSync(join(__dirname, '../../docker-compose.yml'), 'utf8');

describe('Temporal dynamic config', () => {
  test.each(Object.entries(LOW_LATENCY_DYNAMIC_CONFIG))('docker-compose.yml sets %s to the dev server value', (key, value) => {
    // The compose file's inline dynamic config: `key:` then `- value: <v>` on the next line.
    const m = new RegExp(`^ +${key.replace(/\./g, '\\.')}:\\n +- value: ([^\\s#]+)`, 'm').exec(compose);
    expect(m?.[1]).toBe(JSON.stringify(value));
  });

  test('the dev server command passes every value as --dynamic-config-value', () => {
    const args = devServerArgs({
      port: 1,
      uiPort: false,
      namespace: 'default',
      logLevel: 'warn',
      dynamicConfig: LOW_LATENCY_DYNAMIC_CONFIG,
    });
    const values = args.flatMap((a, i) => (args[i - 1] === '--dynamic-config-value' ? [a] : []));
    expect(values).toEqual([
      'history.transferProcessorMaxPollRPS=1000',
      'system.enableActivityEagerExecution=true',
      'matching.numTaskqueueWritePartitions=1',
    ]);
  });
});

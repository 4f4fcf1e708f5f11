import { createServer, type AddressInfo } from 'node:net';
import { Runtime } from '@temporalio/worker';

/**
 * Installs the Temporal runtime with its Prometheus endpoint on `address` (`host:port`, from
 * WORKER_METRICS_ADDRESS) and returns the address it serves on. Port 0 means any free port: the SDK
 * binds the port itself and does not say which one it got, so a free one is picked here, and picked
 * again when another process took it before the SDK bound it. The caller logs the address.
 */
export async function installMetricsRuntime(
  address: string,
  { attempts = 5, pickPort = freePort }: { attempts?: number; pickPort?: (host: string) => Promise<number> } = {},
): Promise<string> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at);
  const anyPort = Number(address.slice(at + 1)) === 0;
  for (let attempt = 1; ; attempt++) {
    const bindAddress = anyPort ? `${host}:${await pickPort(host)}` : address;
    try {
      Runtime.install({
        telemetryOptions: { metrics: { prometheus: { bindAddress, useSecondsForDurations: true, unitSuffix: true } } },
      });
      return bindAddress;
    } catch (err) {
      // A failed install leaves no runtime behind: the next one starts afresh.
      if (!anyPort || attempt >= attempts || !/already in use/i.test(String(err))) throw err;
    }
  }
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: host.replace(/^\[|\]$/g, ''), port: 0 }, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

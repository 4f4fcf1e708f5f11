import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { API_TITLE, buildOpenApiDocument, OPENAPI_PATH, type OpenApiDocument } from '../openapi';
import { metricsEnabled } from '../../http/metrics-route';

/**
 * GET /v1/openapi.json (the OpenAPI 3.1 document, built once per app) and GET /docs (Swagger UI,
 * served from the swagger-ui-dist package under /docs/*). No authentication: the document only
 * describes the API. The UI loads the document by a relative URL, so it also works behind a proxy
 * that mounts the service under a path prefix.
 */
export function registerDocsRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  let document: OpenApiDocument | undefined;
  router.get(OPENAPI_PATH, (ctx) => {
    document ??= buildOpenApiDocument({ publicUrl: deps.config.publicUrl, metrics: metricsEnabled(deps.config.env) });
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = document;
  });

  router.get('/docs', (ctx) => {
    // Asset URLs in the page are relative to /docs/, so /docs itself redirects there.
    if (!ctx.path.endsWith('/')) {
      ctx.status = 301;
      ctx.redirect('docs/');
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = INDEX_HTML;
  });

  router.get('/docs/:file', async (ctx) => {
    const file = ctx.params.file;
    if (file === INITIALIZER) {
      ctx.type = 'application/javascript; charset=utf-8';
      ctx.body = INITIALIZER_JS;
      return;
    }
    const type = ASSETS.get(file);
    if (!type) return; // 404 in the generic envelope; only the files below are ever read
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.type = type;
    ctx.body = await asset(file);
  });
}

/** swagger-ui-dist files the page uses (the only files served from the package). */
const ASSETS = new Map([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['index.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'application/javascript; charset=utf-8'],
  ['swagger-ui-standalone-preset.js', 'application/javascript; charset=utf-8'],
  ['favicon-32x32.png', 'image/png'],
  ['favicon-16x16.png', 'image/png'],
]);
const INITIALIZER = 'swagger-initializer.js';

const assetDir = dirname(require.resolve('swagger-ui-dist/package.json'));
const cache = new Map<string, Promise<Buffer>>();
function asset(file: string): Promise<Buffer> {
  let data = cache.get(file);
  if (!data) {
    data = readFile(join(assetDir, file));
    data.catch(() => cache.delete(file));
    cache.set(file, data);
  }
  return data;
}

/** Our own page and initializer (the package's point at the petstore); no inline script. */
const INDEX_HTML = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>${API_TITLE}: API docs</title>
    <link rel="stylesheet" type="text/css" href="./swagger-ui.css" />
    <link rel="stylesheet" type="text/css" href="./index.css" />
    <link rel="icon" type="image/png" href="./favicon-32x32.png" sizes="32x32" />
    <link rel="icon" type="image/png" href="./favicon-16x16.png" sizes="16x16" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="./swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="./swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="./${INITIALIZER}" charset="UTF-8"></script>
  </body>
</html>
`;

const INITIALIZER_JS = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: '..${OPENAPI_PATH}',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
  });
};
`;

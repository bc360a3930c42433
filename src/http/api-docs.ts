import { createReadStream, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { parse } from 'yaml';

/**
 * GET /openapi.json — the OpenAPI 3.1 document (src/openapi/tollgate.openapi.yaml, copied
 * beside this module's directory into dist/ by `npm run build`) — and GET /docs, an API
 * reference rendering it with Swagger UI. No key: the document describes the API, it grants
 * nothing. Swagger UI's files come from the swagger-ui-dist package and are served by the
 * gateway itself; the page's Content-Security-Policy lets it load or send nothing anywhere
 * else (and Swagger UI's default of posting the document to an online validator is off).
 */

const DOCUMENT = new URL('../openapi/tollgate.openapi.yaml', import.meta.url);

/** Parsed on the first request, not at startup: most gateways never serve it. */
let documentJson: string | null = null;

export function openApiJson(): string {
  documentJson ??= JSON.stringify(parse(readFileSync(DOCUMENT, 'utf8')));
  return documentJson;
}

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files under /docs/ and their types: Swagger UI's bundle and stylesheet, and our initializer. */
const ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** Relative URLs, so that the page also works behind a proxy that mounts the gateway under a prefix. */
const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tollgate API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

/** A file rather than an inline script, so that the policy can allow scripts from this origin only. */
const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

/** Nothing leaves the machine: every fetch, script, style, image and font is this origin's. */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export function registerApiDocs(app: FastifyInstance): void {
  app.get('/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(openApiJson()));

  app.get('/docs', async (_request, reply) => reply.header('content-security-policy', DOCS_CSP).type('text/html; charset=utf-8').send(PAGE));

  app.get('/docs/init.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(INIT));

  for (const [name, type] of Object.entries(ASSETS)) {
    app.get(`/docs/${name}`, async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=3600').type(type).send(createReadStream(join(SWAGGER_UI_DIR, name))),
    );
  }
}

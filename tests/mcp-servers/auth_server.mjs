// A real OAuth 2.1 authorization server for chainbox's auth tests: the npm
// package `oidc-provider` (pinned in package.json next to this file,
// installed by install.sh into target/mcp-servers), configured for the
// client-credentials grant with RFC 8707 resource indicators, so that a token
// requested for a resource is an RS256-signed JWT access token whose `aud` is
// that resource. Tests point `chainbox serve --auth-issuer` at it and fetch
// tokens from it, or let the MCP Python SDK discover it (oauth_client.py).
//
// Usage:
//   node tests/mcp-servers/auth_server.mjs [--port N] [--modules DIR]
//        [--default-resource URL] [--ttl SECONDS] [--ignore-stdin]
//
//   --port N       port on 127.0.0.1; 0 (the default) takes any free port.
//   --modules DIR  the node_modules holding oidc-provider; else env
//                  CHAINBOX_AUTH_MODULES; else target/mcp-servers/node_modules
//                  of this repository. Resolved from that directory alone
//                  (createRequire), so neither cwd nor NODE_PATH matters.
//   --default-resource URL  resource used when a token request names none
//                  (oidc-provider's features.resourceIndicators.defaultResource);
//                  without it such a request gets an opaque token with no
//                  audience, which chainbox must refuse.
//   --ttl SECONDS  lifetime of access tokens (default 600), short for
//                  expiry tests.
//   --ignore-stdin do not exit when stdin closes (for starting it by hand in
//                  the background, where stdin is /dev/null).
//
// Once listening it prints exactly one JSON line on stdout:
//   {"issuer":"http://127.0.0.1:PORT","token_endpoint":"...","jwks_uri":"..."}
// and nothing else there (oidc-provider's notices go to stderr). It exits on
// SIGTERM/SIGINT and when its stdin closes, so a test that dies (and so
// closes the pipe) leaves no orphan behind.
//
// Clients (all may authenticate with client_secret_basic or
// client_secret_post; the `sub` of a client-credentials token is the
// client_id, one principal each):
//   alice / alice-secret  may get scopes "chainbox:run payments:write"
//   bob   / bob-secret    may get "chainbox:run"
//   carol / carol-secret  may get "profile:read" only
// A client asking for more than it may get is not refused: its token carries
// the intersection (possibly no `scope` at all), so a test can present a
// token without chainbox:run to chainbox. Dynamically registered clients
// (open registration at /reg) may get "chainbox:run".
//
// Resources: any http URL on 127.0.0.1 or localhost (any port, any path);
// others get invalid_target. The token's `aud` is the resource string exactly
// as the client sent it (a string, not an array).

import { createRequire } from 'node:module';
import { pathToFileURL, fileURLToPath } from 'node:url';
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';

// oidc-provider writes notices with console.info, i.e. to stdout, which is
// reserved for the one JSON line the tests parse.
console.log = console.info = (...args) => console.error(...args);

function parseArgs(argv) {
  const opts = { port: 0, modules: undefined, defaultResource: undefined, ttl: 600, ignoreStdin: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case '--port': opts.port = Number(value()); break;
      case '--modules': opts.modules = value(); break;
      case '--default-resource': opts.defaultResource = value(); break;
      case '--ttl': opts.ttl = Number(value()); break;
      case '--ignore-stdin': opts.ignoreStdin = true; break;
      default: throw new Error(`unknown argument ${flag}`);
    }
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.resolve(
  opts.modules ?? process.env.CHAINBOX_AUTH_MODULES ?? path.join(here, '..', '..', 'target', 'mcp-servers', 'node_modules'),
);
// oidc-provider is an ES module without "exports": resolve its entry file
// from the given node_modules and import it by file URL.
const require = createRequire(path.join(modules, 'resolve-from-here.js'));
const { default: Provider, errors } = await import(pathToFileURL(require.resolve('oidc-provider')).href);

// What each client may be granted; the rest of a request is dropped.
const ALLOWED_SCOPES = {
  alice: 'chainbox:run payments:write',
  bob: 'chainbox:run',
  carol: 'profile:read',
};
const REGISTERED_CLIENT_SCOPES = 'chainbox:run';

function isLoopbackResource(resource) {
  const url = URL.parse(resource);
  return url !== null && url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === 'localhost');
}

// A fresh signing key per run: the tests fetch it from jwks_uri, never from
// a file, and nothing outside a test ever trusts it.
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256', kid: crypto.randomUUID() };

// Listen first, so that the issuer can name the port actually taken.
const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(opts.port, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const client = (id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  // One method per client in oidc-provider, but a client registered with
  // either secret method is accepted with the other one too
  // (shared/client_auth.js), so the SDK's default (basic) and a test's
  // form-encoded secret (post) both work.
  token_endpoint_auth_method: 'client_secret_basic',
});

const provider = new Provider(issuer, {
  clients: Object.keys(ALLOWED_SCOPES).map(client),
  jwks: { keys: [signingKey] },
  // Static scopes are advertised in scopes_supported; clients carry no
  // `scope` metadata, so oidc-provider does not reject a scope outside a
  // client's allowance: getResourceServerInfo below narrows it instead.
  scopes: ['openid', 'offline_access', 'chainbox:run', 'payments:write', 'profile:read'],
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      async defaultResource(_ctx, _client, oneOf) {
        return oneOf ?? opts.defaultResource;
      },
      async getResourceServerInfo(_ctx, resource, client) {
        if (!isLoopbackResource(resource)) {
          throw new errors.InvalidTarget('resource must be an http URL on 127.0.0.1 or localhost');
        }
        return {
          scope: ALLOWED_SCOPES[client.clientId] ?? REGISTERED_CLIENT_SCOPES,
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: opts.ttl,
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});

server.on('request', provider.callback());

process.stdout.write(`${JSON.stringify({
  issuer,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
})}\n`);

const exit = () => {
  server.close();
  process.exit(0);
};
process.on('SIGTERM', exit);
process.on('SIGINT', exit);
if (!opts.ignoreStdin) {
  process.stdin.on('end', exit);
  process.stdin.on('error', exit);
  process.stdin.resume();
}

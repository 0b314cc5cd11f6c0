// A real OAuth 2.1 authorization server for the client tests: oidc-provider
// (pinned in tests/clients/package.json) on 127.0.0.1, a port of its own.
//
//   node issuer.mjs [--tls-cert FILE --tls-key FILE]
//
// Prints its issuer URL (http://127.0.0.1:PORT, or https:// with the
// certificate) as the first line of stdout, then serves until killed.
//
// Confidential clients for the client-credentials grant (client_secret_basic,
// the MCP Python SDK's default), pre-registered: the SDK's
// ClientCredentialsOAuthProvider takes a client id and secret and never
// registers dynamically, so no registration endpoint is opened.
//
//   reader / reader-secret   scopes catalog.read
//   writer / writer-secret   scopes catalog.read catalog.write
//
// Access tokens are JWTs (RS256, this run's own key, in its JWKS) whose
// `aud` is the resource the client asked for (RFC 8707 `resource`) and
// whose `scope` is what the client asked for, less what it may not have.
// Which scopes a client may have for a resource is decided in
// getResourceServerInfo, not by the client's `scope` metadata: oidc-provider
// checks that metadata only against its own static scopes (openid, ...),
// and the MCP SDK asks for every scope the resource's 401 names (else its
// metadata's scopes_supported), whatever the provider was given, so the
// filter has to be the authorization server's.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';

import Provider, { errors } from 'oidc-provider';

const CLIENT_SCOPES = {
  reader: 'catalog.read',
  writer: 'catalog.read catalog.write',
};

function option(name) {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

const cert = option('--tls-cert');
const key = option('--tls-key');
const server = cert && key
  ? https.createServer({ cert: readFileSync(cert), key: readFileSync(key) })
  : http.createServer();

// The port is known only once listening, and the issuer names it: listen
// first, then make the provider and hand it the requests.
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
const issuer = `${cert ? 'https' : 'http'}://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: Object.keys(CLIENT_SCOPES).map((id) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  })),
  jwks: { keys: [signing] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: false },
    revocation: { enabled: false },
    resourceIndicators: {
      enabled: true,
      // A token without a resource would not be a JWT for anyone: ask for one.
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => false,
      getResourceServerInfo: (_ctx, resourceIndicator, client) => {
        const scope = CLIENT_SCOPES[client.clientId];
        const url = new URL(resourceIndicator);
        if (!scope || url.hostname !== '127.0.0.1') {
          throw new errors.InvalidTarget('this test issuer serves loopback resources only');
        }
        return {
          scope,
          audience: resourceIndicator,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});
provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error:', err));
provider.on('grant.error', (_ctx, err) => console.error('oidc-provider grant.error:', err.message, err.error_description ?? ''));

server.on('request', provider.callback());
process.stdout.write(`${issuer}\n`);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}

// A real OpenID Connect provider for the sign-on tests: the OpenID-certified `oidc-provider`
// package, one static client, PKCE required, a role claim, RP-initiated logout, and a login page
// of its own that checks each test person's password (the package's development login accepts
// any). Started by tests/support/oidc.py; it prints "ready" once it listens.
//
// Environment: OIDC_PORT, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_TOKEN_AUTH_METHOD,
// OIDC_REDIRECT_URI, OIDC_POST_LOGOUT_URI, OIDC_ROLE_CLAIM, OIDC_PEOPLE (a JSON file:
// {"login": {"password", "email", "email_verified", "name", "roles": [...]}}).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const env = process.env;
const issuer = `http://127.0.0.1:${env.OIDC_PORT}`;
const people = JSON.parse(readFileSync(env.OIDC_PEOPLE, 'utf8'));
const roleClaim = env.OIDC_ROLE_CLAIM || 'roles';

const provider = new Provider(issuer, {
  clients: [{
    client_id: env.OIDC_CLIENT_ID,
    client_secret: env.OIDC_CLIENT_SECRET,
    token_endpoint_auth_method: env.OIDC_TOKEN_AUTH_METHOD || 'client_secret_basic',
    redirect_uris: [env.OIDC_REDIRECT_URI],
    post_logout_redirect_uris: [env.OIDC_POST_LOGOUT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username', roleClaim],
  },
  async findAccount(ctx, sub) {
    const person = people[sub];
    if (!person) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          preferred_username: sub,
          name: person.name,
          email: person.email,
          email_verified: person.email_verified,
          [roleClaim]: person.roles,
        };
      },
    };
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
  },
  cookies: { keys: ['test-only-cookie-key'] },
});

function page(title, body) {
  return `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${title}</title></head>
<body><h1>${title}</h1>${body}</body></html>`;
}

async function logoutSource(ctx, form) {
  ctx.body = page('Test provider: sign out', `${form}
<button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>`);
}

async function postLogoutSuccessSource(ctx) {
  ctx.body = page('Test provider: signed out', '<p>You are signed out.</p>');
}

function loginPage(res, uid, error) {
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(page('Test provider: sign in', `${error ? `<p role="alert">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label>Username <input name="username" autofocus></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button></form>`));
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

async function grantConsent(details) {
  // A first-party client: every scope and claim asked for is granted without a question.
  const { prompt, params, session } = details;
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  return grant.save();
}

async function interaction(req, res, uid, submitted) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === 'consent') {
    const grantId = await grantConsent(details);
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (!submitted) return loginPage(res, uid, '');
  const form = await readForm(req);
  const person = people[form.get('username')];
  if (!person || person.password !== form.get('password')) {
    return loginPage(res, uid, 'Wrong username or password.');
  }
  return provider.interactionFinished(
    req, res, { login: { accountId: form.get('username') } }, { mergeWithLastSubmission: false },
  );
}

const callback = provider.callback();
http.createServer(async (req, res) => {
  const match = new URL(req.url, issuer).pathname.match(/^\/interaction\/([^/]+)(\/login)?$/);
  if (!match) return callback(req, res);
  try {
    await interaction(req, res, match[1], req.method === 'POST' && Boolean(match[2]));
  } catch (error) {
    res.statusCode = 400;
    res.end(String(error));
  }
}).listen(Number(env.OIDC_PORT), '127.0.0.1', () => console.log('ready'));

// Talks to the liveheap routes: always JSON, the bearer token when the server wants one,
// and every failure as an ApiError with a one-line reason (the page shows it; it never throws
// past the refresh loop).

import { toQuery } from './query.js';
import { readReport } from './report.js';

const TOKEN_KEY = 'liveheap.token';
const TIMEOUT_MS = 10000;

export class ApiError extends Error {
  constructor(message, status = 0) {
    super(message);
    this.status = status;  // 0: no HTTP answer at all (server down, restarting, timeout)
  }
}

// The routes live beside the page: /debug/memory/ or /debug/memory/index.html -> /debug/memory.
export function apiBase(pathname) {
  return pathname.replace(/index\.html$/, '').replace(/\/+$/, '');
}

// sessionStorage can be unavailable (privacy settings, some embedded views): then the token
// lives only as long as the page.
const memory = new Map();
function load(key) {
  try { return sessionStorage.getItem(key); } catch { return memory.get(key) ?? null; }
}
function save(key, value) {
  try { sessionStorage.setItem(key, value); } catch { memory.set(key, value); }
}

export class Api {
  // onUnauthorized(refused): called on a 401 to the current token (or to none, while none
  // is set); `refused` is true when a token was sent.
  constructor(base, { onUnauthorized = () => {} } = {}) {
    this.base = base;
    this.onUnauthorized = onUnauthorized;
  }

  get token() { return load(TOKEN_KEY); }
  set token(value) { save(TOKEN_KEY, value); }

  get(route, params) { return this.request('GET', route, params); }
  // GET of a report route (diff, top): its answer checked as the report document.
  async report(route, params) {
    const body = await this.get(route, params);
    try {
      return readReport(body);
    } catch (e) {
      throw new ApiError(`GET ${route}: ${e.message}.`, 200);
    }
  }
  post(route, params) { return this.request('POST', route, params); }

  async request(method, route, params = {}) {
    // As the server's to_query() writes it (query.js): pid 'port', the process holding the
    // port, is no pid= at all.
    const query = toQuery({ format: 'json', ...params });
    const headers = { Accept: 'application/json' };
    const token = this.token;
    if (token) headers.Authorization = `Bearer ${token}`;

    let response;
    let text;
    try {
      response = await fetch(`${this.base}/${route}?${query}`, {
        method, headers, cache: 'no-store', signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      text = await response.text();
    } catch (e) {
      const why = e?.name === 'TimeoutError' ? 'no answer in 10 s' : 'connection failed';
      throw new ApiError(`Cannot reach the server (${why}).`, 0);
    }
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { /* handled below */ }

    if (response.status === 401) {
      // Only a 401 to the token held now says anything about it: a request sent before the
      // user entered a token (the refresh loop's, in flight meanwhile) would ask again and
      // hide the answer to the token just entered.
      if (token === this.token) this.onUnauthorized(Boolean(token));
      throw new ApiError(token ? 'The server refused the access token.' : 'The server needs an access token.', 401);
    }
    if (!response.ok) {
      const reason = body?.error ?? (text.trim().split('\n')[0] || response.statusText);
      throw new ApiError(`${method} ${route}: ${reason} (HTTP ${response.status})`, response.status);
    }
    if (body === null || typeof body !== 'object') {
      throw new ApiError(`${method} ${route}: the server's answer is not JSON.`, response.status);
    }
    return body;
  }
}

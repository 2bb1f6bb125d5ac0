// Waiting on observable state, not on time: the browser tests poll `check` until it returns
// true, and fail with what it last returned.
import assert from 'node:assert/strict';

export async function until(what, check, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await check();
      if (last === true) return;
    } catch (e) { last = e.message; }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

// Counts the page's requests to `route` (the last part of a path under /debug/memory, e.g.
// 'processes') from now on, for waits on what the page did rather than on time. Every
// refresh asks /processes first and refreshes run one at a time, so once two refreshes have
// begun after a change, the first of them has finished drawing: `count >= 2`. stop() detaches.
export function countRequests(page, route) {
  const counter = { count: 0 };
  const seen = (request) => {
    if (new URL(request.url()).pathname.endsWith(`/${route}`)) counter.count += 1;
  };
  page.on('request', seen);
  counter.stop = () => page.off('request', seen);
  return counter;
}

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

// The report document of /diff and /top (the server's liveheap/report.hpp, "schema": 1):
// the page reads the same schema the server writes and liveheap-watch reads, and an answer
// of another schema, or not a report at all, is a one-line error rather than a blank table.

export const REPORT_SCHEMA = 1;

// `body` when it is a report this page can read; otherwise throws Error saying why. An
// answer without "schema" comes from a server older than the field, whose layout is the same.
export function readReport(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Error('the answer is not a liveheap report');
  }
  if ('schema' in body && body.schema !== REPORT_SCHEMA) {
    throw new Error(`the report's schema is ${JSON.stringify(body.schema)}; this page reads schema ${REPORT_SCHEMA} (reload it after an upgrade)`);
  }
  if (body.total === null || typeof body.total !== 'object') throw new Error('the report has no total');
  if (!Array.isArray(body.stats)) throw new Error('the report has no stats');
  return body;
}

// What a request to the routes asks, mirrored from the server's request model
// (include/liveheap/report_query.hpp): the parameters' names in the order the server's
// to_query() writes them (src/report/report_query.cpp's kParamNames; a unit test holds the
// two lists together), and the query written as to_query() writes it: each parameter that
// is not its default, once, in that order.

export const PARAMETERS = [
  'format', 'key', 'limit', 'cumulative', 'include', 'exclude', 'route', 'seconds', 'mode', 'frames',
  'sample_interval', 'max_tracker_memory', 'traceback', 'verdicts', 'pid', 'missing_baseline',
];

// The server's defaults: a parameter at its default says nothing. pid 'port' is the page's
// name for the process holding the port, which a request without pid= asks.
const DEFAULTS = {
  key: 'line', limit: '10', cumulative: '0', seconds: '0', traceback: '0', verdicts: '0',
  pid: 'port', missing_baseline: 'error',
};

// `params` ({name: value}; an array value repeats the parameter, as include= and route= may)
// as a query string without the '?'. A name the server does not take is a mistake here,
// not something to send: it throws.
export function toQuery(params) {
  for (const name of Object.keys(params)) {
    if (!PARAMETERS.includes(name)) throw new Error(`no parameter ${name} in the server's request model`);
  }
  const query = new URLSearchParams();
  for (const name of PARAMETERS) {
    const values = [params[name]].flat();
    for (const value of values) {
      if (value === undefined || value === null || value === '') continue;
      if (String(value) === DEFAULTS[name]) continue;
      query.append(name, String(value));
    }
  }
  return query.toString();
}

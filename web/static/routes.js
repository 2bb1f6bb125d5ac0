// The "by route" panel: GET routes (the host's requests tagged with their route), one row a
// route, the route whose requests left the most behind first. Hidden while no request is
// tagged.
import { formatSize, formatCount } from './format.js';

function cell(text, cls) {
  const td = document.createElement('td');
  if (cls) td.className = cls;
  td.textContent = text;
  return td;
}

// Fills the table body `tbody` from a /routes answer; false when there was nothing to show.
export function showRoutes(tbody, answer) {
  const routes = (answer?.routes ?? []).filter((r) => r.requests > 0 || r.route !== '(no request)');
  if (!routes.some((r) => r.requests > 0)) {
    tbody.replaceChildren();
    return false;
  }
  tbody.replaceChildren(...routes.map((r) => {
    const tr = document.createElement('tr');
    const verdict = document.createElement('td');
    verdict.className = 'verdict-cell';
    const badge = document.createElement('span');
    badge.className = `verdict ${r.verdict}`;
    badge.textContent = r.verdict;
    verdict.append(badge);
    tr.append(cell(r.route, 'site-cell'), cell(formatCount(r.requests), 'num'),
              cell(formatSize(r.retained_per_request), 'num'), cell(formatSize(r.allocated_per_request), 'num'),
              cell(formatSize(r.live_bytes), 'num'), verdict);
    return tr;
  }));
  return true;
}

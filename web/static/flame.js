// Growth since the baseline as an icicle (flame) graph, the pure part: whole stacks and their
// size change in, a tree and its rectangles out. No DOM: flameview.js draws what this lays out.
//
// The rules, chosen so that growth and shrinkage both show and nothing cancels out of sight:
//   - A stack's weight is |size_diff|. A frame's weight is the sum of the weights of the
//     stacks through it, so a parent is exactly as wide as its children together, plus
//     the stacks that end in it (its "self", left as a gap on its right).
//   - A frame's value is the signed sum (net change); its colour is the sign of that net
//     ("up" grows, "down" shrinks, "zero" as much freed as added). grown and shrunk keep
//     the two sides apart for the tooltip.
//   - Frames merge by function (the full name; the module when there is none), as
//     flamegraph.pl merges folded stacks. The root is every stack shown.
//   - Siblings are ordered by weight, largest first (then by label), so the biggest change
//     sits on the left at every level.
//   - Zoom re-roots at a frame: it spans the whole width at its own depth; its ancestors
//     stay above it, full width, so a click on one zooms back out.

export const ROOT_KEY = '';

// A frame's identity when stacks merge.
export function frameKey(frame) {
  return frame.function || frame.module || frame.address || '??';
}

const basename = (path) => (path || '').split('/').pop();

// The name shown in a box: the server's short name (as the table shows it), else the full
// one, else the module.
export function frameLabel(frame) {
  return frame.short_function || frame.function || basename(frame.module) || frame.address || '??';
}

// The key=traceback diff's statistics as stacks, root first (the server sends a traceback
// innermost first). Stacks that did not change carry no weight and are left out.
export function stacksFromDiff(stats) {
  return (Array.isArray(stats) ? stats : [])
    .filter((s) => Number(s.size_diff) !== 0 && Array.isArray(s.traceback))
    .map((s) => ({ frames: [...s.traceback].reverse(), value: Number(s.size_diff), count: Number(s.count_diff ?? 0) }));
}

function newNode(key, label, frame, parent) {
  return {
    key, label, parent,
    name: frame?.function || frame?.module || label,  // the full name, for the tooltip
    locations: new Set(),  // "file:line" of the frames merged here
    value: 0, grown: 0, shrunk: 0, weight: 0, self: 0, count: 0,
    depth: parent ? parent.depth + 1 : 0,
    children: new Map(),
  };
}

// stacks: [{frames: [{function, short_function, file, line, module}] root first, value, count}].
export function buildTree(stacks, { rootLabel = 'all stacks' } = {}) {
  const root = newNode(ROOT_KEY, rootLabel, null, null);
  const add = (node, value, count) => {
    node.value += value;
    node.count += count;
    node.weight += Math.abs(value);
    if (value > 0) node.grown += value; else node.shrunk += value;
  };
  for (const stack of stacks) {
    const value = Number(stack.value) || 0;
    if (value === 0) continue;
    const count = Number(stack.count) || 0;
    let node = root;
    add(node, value, count);
    for (const frame of stack.frames ?? []) {
      const key = frameKey(frame);
      let child = node.children.get(key);
      if (!child) {
        child = newNode(key, frameLabel(frame), frame, node);
        node.children.set(key, child);
      }
      if (frame.file) child.locations.add(`${frame.file}:${frame.line ?? 0}`);
      add(child, value, count);
      node = child;
    }
    node.self += Math.abs(value);
  }
  return root;
}

const bySize = (a, b) => b.weight - a.weight || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0);
export function sortedChildren(node) {
  return [...node.children.values()].sort(bySize);
}

// The keys from the root to `node` (the root's own is left out): a zoom that survives a
// refresh, when the tree is rebuilt.
export function pathOf(node) {
  const path = [];
  for (let n = node; n && n.parent; n = n.parent) path.unshift(n.key);
  return path;
}

// The deepest node along `path` that still exists (the root when none does).
export function findPath(root, path = []) {
  let node = root;
  for (const key of path) {
    const next = node.children.get(key);
    if (!next) break;
    node = next;
  }
  return node;
}

export const signOf = (n) => (n > 0 ? 'up' : n < 0 ? 'down' : 'zero');

// Rectangles of the tree zoomed at `focus` (default: the root). x and width are fractions
// of the whole width; depth counts rows from the top (the root's row is 0). `minWidth`
// drops boxes narrower than it (and so their children): a pixel's worth, for drawing.
export function layout(root, { focus = root, minWidth = 0 } = {}) {
  const rects = [];
  const rect = (node, x, width, ancestor) => ({
    node, x, width, depth: node.depth, ancestor,
    label: node.label, name: node.name, value: node.value, grown: node.grown, shrunk: node.shrunk,
    weight: node.weight, count: node.count, sign: signOf(node.value), path: pathOf(node),
    share: root.weight ? node.weight / root.weight : 0,
  });
  const chain = [];
  for (let n = focus.parent; n; n = n.parent) chain.unshift(n);
  for (const n of chain) rects.push(rect(n, 0, 1, true));
  if (focus.weight === 0) {
    rects.push(rect(focus, 0, 1, false));
    return rects;
  }
  const place = (node, x, width) => {
    rects.push(rect(node, x, width, false));
    let at = x;
    for (const child of sortedChildren(node)) {
      const w = (width * child.weight) / node.weight;
      if (w >= minWidth && w > 0) place(child, at, w);
      at += w;
    }
  };
  place(focus, 0, 1);
  return rects;
}

// The text that fits in `px` pixels at `charPx` per character: the whole text, else its
// start and an ellipsis, else nothing (fewer than 3 characters say nothing useful).
export function fitLabel(text, px, charPx = 7) {
  const room = Math.floor((px - 6) / charPx);  // 3 px of padding each side
  if (room >= text.length) return text;
  if (room < 3) return '';
  return `${text.slice(0, room - 1)}…`;
}

// The flame graph panel: draws flame.js's layout as an SVG made by this page (nothing
// fetched, no library), root on top. A click on a frame zooms into it; a click on a frame
// above it, or on the path over the graph, zooms back out. Server text only ever goes
// through textContent; geometry goes in SVG attributes (the CSP forbids style attributes).
import { buildTree, layout, findPath, pathOf, fitLabel } from './flame.js';
import { formatSize, formatCount } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const ROW = 20;        // px per depth
const CHAR_PX = 7.3;   // a character of the 12 px monospace labels (DejaVu Sans Mono: 0.6 em)
const px = (x) => Math.round(x * 100) / 100;

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

function percent(share) {
  const p = 100 * share;
  return `${p >= 10 || p === 0 ? p.toFixed(0) : p.toFixed(1)}%`;
}

// The tooltip: the full name, where it is, the exact change and its two sides.
function tooltip(r) {
  const lines = [r.name];
  const places = [...r.node.locations];
  if (places.length) lines.push(places.slice(0, 3).join(', ') + (places.length > 3 ? `, … (${places.length} lines)` : ''));
  lines.push(`${formatSize(r.value, true)} (${formatCount(r.value, true)} B) since the baseline, ${formatCount(r.count, true)} blocks`);
  if (r.grown && r.shrunk) lines.push(`grew ${formatSize(r.grown, true)}, shrank ${formatSize(r.shrunk, true)}`);
  lines.push(`${percent(r.share)} of the change shown`);
  lines.push(r.ancestor ? 'click to zoom out to here' : 'click to zoom in');
  return lines.join('\n');
}

export class FlameGraph {
  // box: the graph's container; crumbs: where the zoom path is shown; empty: the message
  // shown instead of an empty graph.
  constructor(box, crumbs, empty) {
    this.box = box;
    this.crumbs = crumbs;
    this.empty = empty;
    this.root = buildTree([]);
    this.zoomPath = [];  // keys from the root: a zoom survives refreshes
    this.drawn = '';     // what is drawn now: a refresh with the same data redraws nothing
    this.emptyText = '';
    const zoomFrom = (target) => {
      const frame = target.closest?.('[data-path]');
      if (frame) this.zoom(JSON.parse(frame.dataset.path));
    };
    box.addEventListener('click', (e) => zoomFrom(e.target));
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); zoomFrom(e.target); }
    });
    crumbs.addEventListener('click', (e) => zoomFrom(e.target));
    new ResizeObserver(() => this.draw()).observe(box);
  }

  // stacks: flame.js stacks (root first). emptyText: what to say when none changed.
  update(stacks, emptyText = 'No stack changed since the baseline.') {
    this.root = buildTree(stacks);
    this.emptyText = emptyText;
    this.draw();
  }

  zoom(path) {
    this.zoomPath = path;
    this.draw();
  }

  draw() {
    const width = Math.max(320, Math.floor(this.box.clientWidth));
    const focus = findPath(this.root, this.zoomPath);
    const rects = this.root.weight > 0 ? layout(this.root, { focus, minWidth: 0.5 / width }) : [];
    const signature = `${width}|${JSON.stringify(pathOf(focus))}|${this.emptyText}|` +
      rects.map((r) => `${r.path.join('\u0001')}:${r.x}:${r.width}:${r.value}:${r.count}`).join('|');
    if (signature === this.drawn) return;
    this.drawn = signature;

    this.empty.textContent = rects.length ? '' : this.emptyText;
    this.empty.hidden = rects.length > 0;
    this.renderCrumbs(focus);
    if (!rects.length) {
      this.box.replaceChildren();
      return;
    }
    const depth = Math.max(...rects.map((r) => r.depth)) + 1;
    const graph = svg('svg', {
      class: 'flame', width, height: depth * ROW, viewBox: `0 0 ${width} ${depth * ROW}`,
      role: 'img', 'aria-label': 'growth since the baseline by stack, root on top',
    });
    for (const r of rects) {
      const x = r.x * width;
      const w = r.width * width;
      const cls = ['flame-frame', r.sign];
      if (r.ancestor) cls.push('ancestor');
      if (!r.ancestor && r.node === focus) cls.push('focus');
      const g = svg('g', { class: cls.join(' '), tabindex: 0, 'data-path': JSON.stringify(r.path), 'data-weight': r.weight, 'data-value': r.value });
      const title = svg('title');
      title.textContent = tooltip(r);
      g.append(title, svg('rect', { x: px(x), y: r.depth * ROW, width: px(w), height: ROW - 1 }));
      const withSize = `${r.label} ${formatSize(r.value, true)}`;
      const label = fitLabel(withSize, w, CHAR_PX) === withSize ? withSize : fitLabel(r.label, w, CHAR_PX);
      if (label) {
        const text = svg('text', { x: px(x + 4), y: r.depth * ROW + 14 });
        text.textContent = label;
        g.append(text);
      }
      graph.append(g);
    }
    this.box.replaceChildren(graph);
  }

  // "all stacks › main › serve": each step zooms to it; the last one is where we are.
  renderCrumbs(focus) {
    const chain = [];
    for (let n = focus; n; n = n.parent) chain.unshift(n);
    this.crumbs.replaceChildren(...chain.flatMap((n, i) => {
      const last = i === chain.length - 1;
      const step = document.createElement(last ? 'span' : 'button');
      step.className = last ? 'crumb here' : 'crumb';
      step.textContent = n.label;
      step.title = n.name;
      step.dataset.path = JSON.stringify(pathOf(n));
      if (!last) step.type = 'button';
      return i ? [document.createTextNode(' › '), step] : [step];
    }));
  }
}

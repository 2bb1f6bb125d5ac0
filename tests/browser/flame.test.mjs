// Unit tests of the flame graph's pure part (web/static/flame.js): node --test.
// Values are powers of two so every width below is an exact binary fraction.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  buildTree, layout, stacksFromDiff, findPath, pathOf, fitLabel, frameKey, frameLabel, signOf,
} from '../../web/static/flame.js';

const f = (name, extra = {}) => ({ function: `${name}()`, short_function: name, file: `/src/${name}.cpp`, line: 10, ...extra });
const stack = (names, value, count = 1) => ({ frames: names.map((n) => f(n)), value, count });

// main -> serve -> {leak +512, cache +256}; main -> cleanup -32... shrinks; main -> idle 0.
const STACKS = [
  stack(['main', 'serve', 'leak'], 512, 4),
  stack(['main', 'serve', 'cache'], 256, 2),
  stack(['main', 'cleanup'], -256, -8),
  stack(['main', 'idle'], 0, 0),
];
const byLabel = (rects) => Object.fromEntries(rects.map((r) => [r.label, r]));

test('a tree merges stacks by function and sums signed values and |weights|', () => {
  const root = buildTree(STACKS);
  assert.equal(root.weight, 1024);
  assert.equal(root.value, 512);
  assert.equal(root.grown, 768);
  assert.equal(root.shrunk, -256);
  assert.equal(root.count, -2);
  const main = root.children.get('main()');
  assert.equal(root.children.size, 1);
  assert.equal(main.weight, 1024);
  assert.deepEqual([...main.children.keys()].sort(), ['cleanup()', 'serve()'], 'an unchanged stack has no frame');
  const serve = main.children.get('serve()');
  assert.equal(serve.weight, 768);
  assert.equal(serve.value, 768);
  assert.equal(serve.children.get('leak()').self, 512);
  assert.deepEqual([...serve.children.get('leak()').locations], ['/src/leak.cpp:10']);
});

test('layout: a parent is exactly as wide as its children, widths are |size_diff| shares', () => {
  const rects = layout(buildTree(STACKS));
  const r = byLabel(rects);
  assert.deepEqual(rects.map((x) => x.label), ['all stacks', 'main', 'serve', 'leak', 'cache', 'cleanup'],
    'depth first, biggest sibling first');
  assert.deepEqual([r['all stacks'].x, r['all stacks'].width, r['all stacks'].depth], [0, 1, 0]);
  assert.deepEqual([r.main.x, r.main.width, r.main.depth], [0, 1, 1]);
  assert.deepEqual([r.serve.x, r.serve.width, r.serve.depth], [0, 0.75, 2]);
  assert.deepEqual([r.cleanup.x, r.cleanup.width, r.cleanup.depth], [0.75, 0.25, 2]);
  assert.deepEqual([r.leak.x, r.leak.width, r.leak.depth], [0, 0.5, 3]);
  assert.deepEqual([r.cache.x, r.cache.width, r.cache.depth], [0.5, 0.25, 3]);
  assert.equal(r.serve.width, r.leak.width + r.cache.width);
  assert.equal(r.main.width, r.serve.width + r.cleanup.width);
  // Growth and shrinkage: the same signs as the table's classes.
  assert.deepEqual([r.leak.sign, r.cleanup.sign, r.main.sign], ['up', 'down', 'up']);
  assert.deepEqual([r.main.value, r.main.grown, r.main.shrunk], [512, 768, -256]);
  assert.equal(r.leak.share, 0.5);
});

test('a frame that grew as much as it shrank is as wide as both, and "zero"', () => {
  const rects = layout(buildTree([stack(['main', 'a'], 128), stack(['main', 'b'], -128)]));
  const r = byLabel(rects);
  assert.deepEqual([r.main.width, r.main.value, r.main.sign], [1, 0, 'zero']);
  assert.deepEqual([r.a.x, r.a.width, r.b.x, r.b.width], [0, 0.5, 0.5, 0.5]);
});

test('a stack that ends in a frame leaves that frame\'s self as a gap on its right', () => {
  const r = byLabel(layout(buildTree([stack(['main'], 256), stack(['main', 'child'], 768)])));
  assert.deepEqual([r.main.width, r.child.x, r.child.width], [1, 0, 0.75]);
});

test('zoom re-roots at a frame: it spans the width, ancestors stay above, full width', () => {
  const root = buildTree(STACKS);
  const serve = findPath(root, ['main()', 'serve()']);
  assert.equal(serve.label, 'serve');
  const rects = layout(root, { focus: serve });
  const r = byLabel(rects);
  assert.deepEqual(rects.map((x) => x.label), ['all stacks', 'main', 'serve', 'leak', 'cache']);
  assert.deepEqual([r['all stacks'].ancestor, r.main.ancestor, r.serve.ancestor], [true, true, false]);
  assert.deepEqual([r['all stacks'].width, r.main.width], [1, 1]);
  assert.deepEqual([r.serve.x, r.serve.width, r.serve.depth], [0, 1, 2]);
  assert.deepEqual([r.leak.x, r.leak.width], [0, 512 / 768]);
  assert.deepEqual([r.cache.x, r.cache.width], [512 / 768, 256 / 768]);
  assert.equal(r.leak.share, 0.5, 'the share stays the whole graph\'s');
  // Zoom at a leaf: it alone, full width.
  const leaf = layout(root, { focus: findPath(root, ['main()', 'serve()', 'leak()']) });
  assert.deepEqual(leaf.filter((x) => !x.ancestor).map((x) => [x.label, x.x, x.width]), [['leak', 0, 1]]);
});

test('a zoom path survives a rebuild, and falls back to what still exists', () => {
  const root = buildTree(STACKS);
  const leak = findPath(root, ['main()', 'serve()', 'leak()']);
  assert.deepEqual(pathOf(leak), ['main()', 'serve()', 'leak()']);
  assert.deepEqual(pathOf(root), []);
  const later = buildTree([stack(['main', 'serve', 'cache'], 64)]);
  assert.equal(findPath(later, pathOf(leak)).label, 'serve', 'the leak is gone: its parent');
  assert.equal(findPath(later, ['nowhere()']), later);
});

test('minWidth drops boxes too narrow to draw, and their children', () => {
  const rects = layout(buildTree(STACKS), { minWidth: 0.3 });
  assert.deepEqual(rects.map((x) => x.label), ['all stacks', 'main', 'serve', 'leak']);
});

test('nothing changed: one empty root', () => {
  const rects = layout(buildTree([]));
  assert.deepEqual(rects.map((x) => [x.label, x.width, x.weight, x.sign]), [['all stacks', 1, 0, 'zero']]);
});

test('the diff\'s tracebacks (innermost first) become stacks root first', () => {
  const stats = [
    { size_diff: 512, count_diff: 4, traceback: [f('leak'), f('serve'), f('main')] },
    { size_diff: 0, count_diff: 0, traceback: [f('idle'), f('main')] },
    { size_diff: -64, count_diff: -1, traceback: [f('gone')] },
  ];
  const stacks = stacksFromDiff(stats);
  assert.deepEqual(stacks.map((s) => [s.frames.map((x) => x.short_function), s.value, s.count]),
    [[['main', 'serve', 'leak'], 512, 4], [['gone'], -64, -1]]);
  assert.deepEqual(stats[0].traceback.map((x) => x.short_function), ['leak', 'serve', 'main'], 'the input is left alone');
  assert.deepEqual(stacksFromDiff(undefined), []);
});

test('frames: merged by full name, labelled by the short one, module when unsymbolized', () => {
  const templ = { function: 'std::vector<int, std::allocator<int> >::push_back(int const&)', short_function: 'std::vector::push_back' };
  assert.equal(frameKey(templ), templ.function);
  assert.equal(frameLabel(templ), 'std::vector::push_back');
  const bare = { function: '', module: '/usr/lib/libfoo.so.1', address: '0x1234' };
  assert.equal(frameKey(bare), '/usr/lib/libfoo.so.1');
  assert.equal(frameLabel(bare), 'libfoo.so.1');
  assert.equal(frameLabel({ address: '0x99' }), '0x99');
});

test('labels fit their box or are cut with an ellipsis', () => {
  assert.equal(fitLabel('leak_request_buffer', 6 + 19 * 7), 'leak_request_buffer');
  assert.equal(fitLabel('leak_request_buffer', 6 + 10 * 7), 'leak_requ…');
  assert.equal(fitLabel('leak_request_buffer', 6 + 2 * 7), '');
  assert.deepEqual([signOf(3), signOf(-3), signOf(0)], ['up', 'down', 'zero']);
});

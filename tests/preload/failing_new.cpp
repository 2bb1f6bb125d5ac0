// Every form of operator new asked for more than any allocator gives, as the C++ runtime
// answers it: the throwing forms run the new_handler, then throw std::bad_alloc; the
// nothrow forms run it, then return null. Under the preload library each hook hands the
// failure to the runtime's own form (src/engine/hook.cpp). Prints one line per form that
// does otherwise, then how many forms answered as the runtime does.
#include <cstddef>
#include <cstdio>
#include <new>

namespace {

int g_handler_calls = 0;

// Called once per failure: it uninstalls itself, so that the runtime gives up after it.
void count_and_give_up() {
  ++g_handler_calls;
  std::set_new_handler(nullptr);
}

// More than any allocator gives (past PTRDIFF_MAX), hidden from the compiler's checks.
volatile std::size_t g_too_big = ~std::size_t{0} / 2 + 1;
constexpr std::align_val_t kAlign{64};

int g_right = 0;

template <typename New>
void expect_throw(const char* form, New new_form) {
  g_handler_calls = 0;
  std::set_new_handler(count_and_give_up);
  try {
    void* p = new_form(g_too_big);
    std::printf("%s: returned %p, no throw\n", form, p);
    return;
  } catch (const std::bad_alloc&) {
  }
  if (g_handler_calls != 1) {
    std::printf("%s: threw, the new_handler called %d times\n", form, g_handler_calls);
    return;
  }
  ++g_right;
}

template <typename New>
void expect_null(const char* form, New new_form) {
  g_handler_calls = 0;
  std::set_new_handler(count_and_give_up);
  void* p = new_form(g_too_big);
  if (p != nullptr || g_handler_calls != 1) {
    std::printf("%s: returned %p, the new_handler called %d times\n", form, p, g_handler_calls);
    return;
  }
  ++g_right;
}

}  // namespace

int main() {
  expect_throw("new", [](std::size_t n) { return ::operator new(n); });
  expect_throw("new[]", [](std::size_t n) { return ::operator new[](n); });
  expect_throw("new aligned", [](std::size_t n) { return ::operator new(n, kAlign); });
  expect_throw("new[] aligned", [](std::size_t n) { return ::operator new[](n, kAlign); });
  expect_null("new nothrow", [](std::size_t n) { return ::operator new(n, std::nothrow); });
  expect_null("new[] nothrow", [](std::size_t n) { return ::operator new[](n, std::nothrow); });
  expect_null("new aligned nothrow", [](std::size_t n) { return ::operator new(n, kAlign, std::nothrow); });
  expect_null("new[] aligned nothrow",
              [](std::size_t n) { return ::operator new[](n, kAlign, std::nothrow); });
  // And a block still comes after them.
  int* const kept = new int(7);
  std::printf("%d of 8 forms failed as the runtime says; then a block holds %d\n", g_right, *kept);
  delete kept;
  return g_right == 8 ? 0 : 1;
}

// A symbol looked up in the loaded objects' GNU hash tables answers as dlsym does: defined
// symbols of libc, of the test itself and of a module loaded later are found; names no
// object defines, and names only referenced (undefined) in some object, are not.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include "loaded_objects.hpp"

namespace liveheap::engine {
namespace {

TEST(DefinedSymbol, AnswersAsDlsymDoes) {
  for (const char* name : {"gnu_get_libc_version", "malloc", "dl_iterate_phdr", "pthread_create", "strcmp",
                           "__libc_start_main", "_dl_find_object"}) {
    ASSERT_NE(dlsym(RTLD_DEFAULT, name), nullptr) << name;
    EXPECT_EQ(defined_in_some_object(name), Defined::yes) << name;
  }
  for (const char* name : {"_PyEval_EvalFrameDefault", "liveheap_no_such_symbol", "", "mallo", "mallocx"}) {
    ASSERT_EQ(dlsym(RTLD_DEFAULT, name), nullptr) << name;
    EXPECT_EQ(defined_in_some_object(name), Defined::no) << name;
  }
}

TEST(DefinedSymbol, FindsAModuleLoadedLater) {
  EXPECT_EQ(defined_in_some_object("module_call"), Defined::no);
  void* module = dlopen(LIVEHEAP_UNWIND_MODULE_A, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(module, nullptr) << dlerror();
  EXPECT_EQ(defined_in_some_object("module_call"), Defined::yes);
  dlclose(module);
}

}  // namespace
}  // namespace liveheap::engine

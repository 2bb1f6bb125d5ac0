// Loading the full library beside this one (see full_library.hpp).
#include "full_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "engine.hpp"

namespace liveheap::boot {
namespace {

constexpr char kFileName[] = "libliveheap_preload_full.so";

pthread_once_t g_once = PTHREAD_ONCE_INIT;
void* g_handle = nullptr;

// "<the directory of this library>/libliveheap_preload_full.so".
bool full_library_path(char (&path)[4096]) noexcept {
  dl_find_object self;
  if (_dl_find_object(reinterpret_cast<void*>(&full_library_function), &self) != 0 ||
      self.dlfo_link_map == nullptr || self.dlfo_link_map->l_name == nullptr)
    return false;
  const char* own = self.dlfo_link_map->l_name;
  const char* slash = std::strrchr(own, '/');
  const int dir_length = slash == nullptr ? 1 : static_cast<int>(slash - own);
  const int n = std::snprintf(path, sizeof path, "%.*s/%s", dir_length, slash == nullptr ? "." : own,
                              kFileName);
  return n > 0 && static_cast<std::size_t>(n) < sizeof path;
}

void load() noexcept {
  char path[4096];
  if (!full_library_path(path)) {
    std::fprintf(stderr, "liveheap: cannot find %s beside the preload library\n", kFileName);
    return;
  }
  // Its static objects, and whatever the loader allocates for it, are liveheap's own.
  engine::begin_ignore();
  g_handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  engine::end_ignore();
  if (g_handle == nullptr) std::fprintf(stderr, "liveheap: cannot load %s: %s\n", path, dlerror());
}

}  // namespace

void* full_library_function(const char* name) noexcept {
  pthread_once(&g_once, load);
  return g_handle == nullptr ? nullptr : dlsym(g_handle, name);
}

}  // namespace liveheap::boot

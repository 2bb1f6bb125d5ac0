// Loading the full library beside this one (see full_library.hpp).
#include "full_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "engine.hpp"

namespace liveheap::boot {
namespace {

constexpr char kFileName[] = "libliveheap_preload_full.so";

pthread_once_t g_once = PTHREAD_ONCE_INIT;
void* g_handle = nullptr;
char g_located[4096];  // locate_full_library's answer, or ""

// "<the directory of this library>/libliveheap_preload_full.so", absolute: a relative
// directory (LD_PRELOAD=build/src/libliveheap_preload.so) is the working directory's now.
bool full_library_path(char (&path)[4096]) noexcept {
  dl_find_object self;
  if (_dl_find_object(reinterpret_cast<void*>(&full_library_function), &self) != 0 ||
      self.dlfo_link_map == nullptr || self.dlfo_link_map->l_name == nullptr)
    return false;
  const char* own = self.dlfo_link_map->l_name;
  char cwd[4096] = "";
  if (own[0] != '/') {
    if (getcwd(cwd, sizeof cwd) == nullptr) return false;
    while (own[0] == '.' && own[1] == '/') own += 2;
  }
  const std::size_t cwd_length = std::strlen(cwd);
  const char* separator = cwd_length > 0 && cwd[cwd_length - 1] != '/' ? "/" : "";
  const char* slash = std::strrchr(own, '/');
  const int n = slash == nullptr
                    ? std::snprintf(path, sizeof path, "%s/%s", cwd_length > 0 ? cwd : ".", kFileName)
                    : std::snprintf(path, sizeof path, "%s%s%.*s/%s", cwd, separator,
                                    static_cast<int>(slash - own), own, kFileName);
  return n > 0 && static_cast<std::size_t>(n) < sizeof path;
}

void load() noexcept {
  char path[4096];
  if (g_located[0] != '\0') std::memcpy(path, g_located, sizeof path);
  else if (!full_library_path(path)) {
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

void locate_full_library() noexcept {
  if (!full_library_path(g_located)) g_located[0] = '\0';
}

void* full_library_function(const char* name) noexcept {
  pthread_once(&g_once, load);
  return g_handle == nullptr ? nullptr : dlsym(g_handle, name);
}

}  // namespace liveheap::boot

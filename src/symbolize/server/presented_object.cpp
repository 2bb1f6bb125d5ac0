// The executable's dl_iterate_phdr (presented_object.hpp).
#include "presented_object.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>

namespace liveheap::symbolize::server {
namespace {
thread_local bool t_presenting = false;
}  // namespace

PresentingOneObject::PresentingOneObject() noexcept { t_presenting = true; }
PresentingOneObject::~PresentingOneObject() { t_presenting = false; }

}  // namespace liveheap::symbolize::server

extern "C" int dl_iterate_phdr(int (*callback)(dl_phdr_info*, std::size_t, void*), void* data) {
  using Iterate = int (*)(int (*)(dl_phdr_info*, std::size_t, void*), void*);
  if (liveheap::symbolize::server::t_presenting) {
    dl_phdr_info object{};
    object.dlpi_addr = 0;
    object.dlpi_name = "";
    return callback(&object, sizeof object, data);
  }
  static const auto libc = reinterpret_cast<Iterate>(dlvsym(RTLD_NEXT, "dl_iterate_phdr", "GLIBC_2.2.5"));
  return libc == nullptr ? 0 : libc(callback, data);
}

// The dashboard's files (web/), compiled into the library by web/embed.cmake.
// Thread-safety: immutable static data.
#pragma once

#include <span>
#include <string_view>

namespace liveheap::web {

struct Asset {
  std::string_view path;          // relative to web/, e.g. "index.html", "app.js"
  std::string_view content_type;  // e.g. "text/html; charset=utf-8"
  std::string_view body;
};

std::span<const Asset> assets() noexcept;
// nullptr when no asset has that path (exact match: no folders, no "..").
const Asset* find_asset(std::string_view path) noexcept;

}  // namespace liveheap::web

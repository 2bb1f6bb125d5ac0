// The public headers' edges: every core header (all but liveheap/json.hpp) compiles without
// nlohmann_json, and what they declare lives in the versioned namespace liveheap::v1 while
// users keep spelling it liveheap::X. This file includes nothing that could bring nlohmann
// in: it must not be declared here.
#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

#include "liveheap/allocator.hpp"
#include "liveheap/export.hpp"
#include "liveheap/format.hpp"
#include "liveheap/history.hpp"
#include "liveheap/http.hpp"
#include "liveheap/pprof.hpp"
#include "liveheap/report.hpp"
#include "liveheap/request_comparison.hpp"
#include "liveheap/settings.hpp"
#include "liveheap/snapshot.hpp"
#include "liveheap/tracker.hpp"

#ifdef NLOHMANN_JSON_VERSION_MAJOR
#error "a core public header includes nlohmann/json.hpp; only liveheap/json.hpp may"
#endif
// A variable of this name cannot be declared once a namespace nlohmann is (json_fwd.hpp too).
[[maybe_unused]] static int nlohmann = 0;

namespace {

// Itanium mangling: N <length><name>... E; the v1 is what a future v2 cannot collide with.
TEST(PublicHeaders, DeclareTheirTypesInTheVersionedNamespace) {
  EXPECT_EQ(std::string(typeid(liveheap::Snapshot).name()), "N8liveheap2v18SnapshotE");
  EXPECT_EQ(std::string(typeid(liveheap::Report).name()), "N8liveheap2v16ReportE");
  EXPECT_EQ(std::string(typeid(liveheap::Options).name()), "N8liveheap2v17OptionsE");
  EXPECT_EQ(std::string(typeid(liveheap::http::Handler).name()), "N8liveheap2v14http7HandlerE");
  EXPECT_EQ(std::string(typeid(liveheap::settings::Range).name()), "N8liveheap2v18settings5RangeE");
  // The version is inline: the unversioned spelling names the same type.
  EXPECT_EQ(typeid(liveheap::Snapshot), typeid(liveheap::v1::Snapshot));
}

TEST(PublicHeaders, DeclareTheirFunctionsInTheVersionedNamespace) {
  // A function's signature carries its parameters' namespaces; its own name is checked on the
  // shared library's symbols (tests/install, LibraryAbi.*).
  EXPECT_EQ(std::string(typeid(&liveheap::take_snapshot).name()), "PFN8liveheap2v18SnapshotEvE");
  std::string (*format)(const liveheap::Report&, std::size_t) = &liveheap::to_json;
  EXPECT_EQ(std::string(typeid(format).name()),
            "PFNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKN8liveheap2v16ReportEmE");
}

}  // namespace

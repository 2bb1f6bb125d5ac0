// The bearer token: every data route needs it, the dashboard's files do not, and the
// comparison is exact.
#include "auth.hpp"
#include "embedded_assets.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

class AuthTest : public ServerTest {
  Config config() const override {
    Config config;
    config.token = "s3cret-token";
    return config;
  }
};

TEST_F(AuthTest, EveryRouteNeedsTheToken) {
  for (const auto& [method, path] : {std::pair{"GET", "/stats"},
                                     {"GET", "/diff"},
                                     {"GET", "/top"},
                                     {"GET", "/tracebacks"},
                                     {"GET", "/baseline"},
                                     {"POST", "/baseline"},
                                     {"POST", "/start"},
                                     {"POST", "/stop"},
                                     {"POST", "/clear"},
                                     {"POST", "/reset-peak"},
                                     {"POST", "/trim"}}) {
    const std::string target = std::string("/debug/memory") + path + "?format=json";
    const Reply missing = send(port(), method, target);
    EXPECT_EQ(missing.status, 401) << path;
    EXPECT_EQ(missing.header("www-authenticate"), R"(Bearer realm="liveheap")");
    EXPECT_EQ(missing.json()["error"], "this server requires Authorization: Bearer <token>");
    const Reply wrong = send(port(), method, target, "Authorization: Bearer s3cret-tokeN\r\n");
    EXPECT_EQ(wrong.status, 401) << path;
    EXPECT_EQ(wrong.header("www-authenticate"), R"(Bearer realm="liveheap", error="invalid_token")");
  }
  // Stopping was refused above: tracing is still on.
  EXPECT_TRUE(is_tracing());
}

TEST_F(AuthTest, TheRightTokenIsAccepted) {
  for (const char* header :
       {"Authorization: Bearer s3cret-token\r\n", "Authorization: bearer s3cret-token\r\n",
        "authorization: BEARER   s3cret-token\r\n"})
    EXPECT_EQ(get(port(), "/debug/memory/stats", header).status, 200) << header;
  for (const char* header : {"Authorization: Basic czNjcmV0LXRva2Vu\r\n", "Authorization: Bearer\r\n",
                             "Authorization: Bearer \r\n", "Authorization: Bearer s3cret-token-and-more\r\n",
                             "Authorization: Bearer s3cret\r\n", "Authorization: s3cret-token\r\n"})
    EXPECT_EQ(get(port(), "/debug/memory/stats", header).status, 401) << header;
}

TEST_F(AuthTest, TheDashboardLoadsWithoutTheToken) {
  EXPECT_EQ(get(port(), "/debug/memory/").status, 200);
  const auto assets = web::assets();
  if (!assets.empty()) {
    EXPECT_EQ(get(port(), "/debug/memory/static/" + std::string(assets[0].path)).status, 200);
  }
  // Errors that need no data still come before the token: no route, wrong method.
  EXPECT_EQ(get(port(), "/debug/memory/nope").status, 404);
  EXPECT_EQ(get(port(), "/debug/memory/start").status, 405);
}

TEST(ConstantTimeEqual, ComparesWholeStrings) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abd", "abc"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("abcabc", "abc"));  // cycling must not make it match
  EXPECT_FALSE(constant_time_equal("", "abc"));
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_FALSE(constant_time_equal("x", ""));
}

}  // namespace
}  // namespace http_test

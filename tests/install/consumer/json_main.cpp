// liveheap/json.hpp from outside: the nlohmann::json overloads (target liveheap::json) on a
// hand-built statistic, checked field by field.
#include <cstdio>

#include <liveheap/json.hpp>

int main() {
  liveheap::Frame frame;
  frame.function = "handle_request";
  frame.file = "app.cpp";
  frame.line = 12;
  const liveheap::Statistic stat{liveheap::Traceback{frame}, 3000, 3};
  const nlohmann::json j = liveheap::to_json(stat, liveheap::KeyType::line);
  std::printf("%s\n", j.dump().c_str());
  return j.at("key") == "app.cpp:12" && j.at("file") == "app.cpp" && j.at("line") == 12 &&
                 j.at("size") == 3000 && j.at("count") == 3 && j.at("average") == 1000.0
             ? 0
             : 1;
}

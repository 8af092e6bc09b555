// The JSON lines of the protocol (§CONF.2) parsed in one pass: the runner
// reads one answer per case and the plug-in host one request, so this is
// their hot path. Only a fast path: on any doubt the caller parses again
// with the strict parser (reference/input_files.h), which decides and words
// the refusal.
#ifndef ENGRAM_CONFORMANCE_RUNNER_WATCHED_JSON_H_
#define ENGRAM_CONFORMANCE_RUNNER_WATCHED_JSON_H_

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_depth.h"

namespace engram::conform {

// nlohmann's DOM builder, watching the keys (§ERR.5) and the depth (§ERR.6)
// as it goes: one pass instead of the strict parse's three (the depth scan,
// the parse, a callback per value). It gives up at the first doubt: a
// repeated key, nesting near the limit, an object of many keys, malformed text.
template <typename Json>
class WatchedDom : public nlohmann::detail::json_sax_dom_parser<Json> {
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  explicit WatchedDom(Json& out) : Base(out, false) {}
  bool start_object(std::size_t n) {
    if (!Open()) return false;
    levels_[depth_ - 1].clear();
    return Base::start_object(n);
  }
  bool end_object() {
    --depth_;
    return Base::end_object();
  }
  bool start_array(std::size_t n) { return Open() && Base::start_array(n); }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }
  bool key(std::string& k) {
    std::vector<std::string>& seen = levels_[depth_ - 1];
    // The protocol's objects have a few keys: a scan; a long object goes to the strict parse.
    if (seen.size() >= 64 || std::find(seen.begin(), seen.end(), k) != seen.end()) return false;
    seen.push_back(k);
    return Base::key(k);
  }

 private:
  bool Open() {
    if (++depth_ >= kMaxJsonDepth) return false;  // at the limit the strict parse decides, and says
    if (depth_ > levels_.size()) levels_.emplace_back();
    return true;
  }
  size_t depth_ = 0;
  std::vector<std::vector<std::string>> levels_;  // per open container: the keys of its object so far
};

// Parses `text` into `out`; false when in doubt (`out` is then unspecified).
// May throw nlohmann::json::exception (a number the builder refuses).
template <typename Json>
bool ParseWatched(std::string_view text, Json& out) {
  WatchedDom<Json> dom(out);
  return Json::sax_parse(text, &dom) && !dom.is_errored();
}

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_WATCHED_JSON_H_

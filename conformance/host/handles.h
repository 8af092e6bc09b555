// A plug-in's layout and hasher handles (§CONF.3) as objects that release them
// with the library's own destroy: a refusal thrown half-way through a test
// leaks nothing. A library without the entry points is Unsupported.
#ifndef ENGRAM_CONFORMANCE_HOST_HANDLES_H_
#define ENGRAM_CONFORMANCE_HOST_HANDLES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conformance/host/marshal.h"
#include "conformance/host/plugin_api.h"

namespace engram::host {

class Layout {
 public:
  Layout(const Api& api, const json& group) : api_(api) {
    if (!api.HasLayout()) throw Unsupported{"engram_layout_* entry points"};
    char err[1024] = "";
    const std::string profile = group.value("profile", "");
    handle_ = api.layout_create(group.at("config").dump().c_str(), profile.empty() ? nullptr : profile.c_str(),
                                I64(group.at("compressedVocabSize")), I64(group.at("compressedPad")),
                                err, sizeof(err));
    if (handle_ == nullptr) throw Refused{err};
  }
  ~Layout() { api_.layout_destroy(handle_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

  engram_layout* get() const { return handle_; }
  size_t layers() const { return static_cast<size_t>(api_.layout_layer_count(handle_)); }
  size_t columns() const { return static_cast<size_t>(api_.layout_columns(handle_)); }
  size_t max_ngram() const { return static_cast<size_t>(api_.layout_max_ngram(handle_)); }
  std::string fingerprint() const {
    if (api_.layout_fingerprint == nullptr) return "";
    char out[65] = "";
    api_.layout_fingerprint(handle_, out);
    return out;
  }

  // §VEC.6 the layers as the vectors write them.
  json LayersJson() const {
    json out = json::array();
    for (size_t i = 0; i < layers(); ++i) {
      int64_t id = 0, rows = 0;
      std::vector<int64_t> m(max_ngram()), p(columns()), o(columns());
      if (api_.layout_layer(handle_, static_cast<int32_t>(i), &id, m.data(), p.data(), o.data(), &rows) != 0) {
        throw Refused{"engram_layout_layer refused index " + std::to_string(i)};
      }
      const size_t heads = columns() / (max_ngram() - 1);
      json primes = json::array();
      for (size_t order = 0; order + 1 < max_ngram(); ++order) {
        primes.push_back(std::vector<int64_t>(p.begin() + static_cast<std::ptrdiff_t>(order * heads),
                                              p.begin() + static_cast<std::ptrdiff_t>((order + 1) * heads)));
      }
      out.push_back({{"layerId", id}, {"multipliers", m}, {"primes", primes}, {"offsets", o}, {"numEmbeddings", rows}});
    }
    return out;
  }

 private:
  const Api& api_;
  engram_layout* handle_ = nullptr;
};

class Hasher {
 public:
  Hasher(const Api& api, const Layout& layout, size_t capacity) : api_(api), layout_(layout) {
    char err[1024] = "";
    handle_ = api.hasher_create(layout.get(), capacity, err, sizeof(err));
    if (handle_ == nullptr) throw Refused{err};
  }
  Hasher(const Api& api, const Layout& layout, engram_hasher* handle) : api_(api), layout_(layout), handle_(handle) {}
  ~Hasher() { api_.hasher_destroy(handle_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  std::unique_ptr<Hasher> Fork() const {
    if (api_.hasher_fork == nullptr) throw Unsupported{"engram_hasher_fork"};
    engram_hasher* copy = api_.hasher_fork(handle_);
    if (copy == nullptr) throw Refused{"engram_hasher_fork returned no state (NULL)"};
    return std::make_unique<Hasher>(api_, layout_, copy);
  }
  // Rows nested [pos][layer][col].
  json Append(const std::vector<int64_t>& ids) {
    const size_t layers = layout_.layers(), cols = layout_.columns();
    std::vector<int64_t> rows(ids.size() * layers * cols);
    char err[1024] = "";
    if (api_.hasher_append(handle_, ids.data(), ids.size(), rows.data(), err, sizeof(err)) != 0) throw Refused{err};
    json out = json::array();
    for (size_t t = 0; t < ids.size(); ++t) {
      json per_layer = json::array();
      for (size_t l = 0; l < layers; ++l) {
        const auto begin = rows.begin() + static_cast<std::ptrdiff_t>((t * layers + l) * cols);
        per_layer.push_back(std::vector<int64_t>(begin, begin + static_cast<std::ptrdiff_t>(cols)));
      }
      out.push_back(per_layer);
    }
    return out;
  }
  void AppendFlat(const std::vector<int64_t>& ids, std::vector<int64_t>& rows) {
    rows.resize(ids.size() * layout_.layers() * layout_.columns());
    char err[1024] = "";
    if (api_.hasher_append(handle_, ids.data(), ids.size(), rows.data(), err, sizeof(err)) != 0) throw Refused{err};
  }
  void Rollback(size_t k) {
    if (api_.hasher_rollback == nullptr) throw Unsupported{"engram_hasher_rollback"};
    char err[1024] = "";
    if (api_.hasher_rollback(handle_, k, err, sizeof(err)) != 0) throw Refused{err};
  }
  void Import(const json& history, const std::string& fingerprint) {
    if (api_.hasher_import == nullptr) throw Unsupported{"engram_hasher_import"};
    const std::vector<int64_t> ids = history.at("history").get<std::vector<int64_t>>();
    char err[1024] = "";
    if (api_.hasher_import(handle_, I64(history.at("position")), ids.data(), ids.size(), fingerprint.c_str(), err,
                           sizeof(err)) != 0) {
      throw Refused{err};
    }
  }
  int64_t position() const { return api_.hasher_position(handle_); }
  std::vector<int64_t> history() const {
    std::vector<int64_t> ids(layout_.max_ngram());
    ids.resize(api_.hasher_history(handle_, ids.data()));
    return ids;
  }

 private:
  const Api& api_;
  const Layout& layout_;
  engram_hasher* handle_ = nullptr;
};

}  // namespace engram::host

#endif  // ENGRAM_CONFORMANCE_HOST_HANDLES_H_

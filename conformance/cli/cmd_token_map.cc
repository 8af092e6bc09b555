// `engram token-map` (spec §TOK): builds the compressed token map from a
// Hugging Face tokenizer.json and prints it with its size and digest.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <iostream>
#include <memory>

#include "conformance/cli/common.h"
#include "base/fileio.h"
#include "reference/input_files.h"
#include "base/error.h"
#include "reference/token_map.h"

namespace engram::cli {

namespace {

// LoadTokenizerJson(path), reading a regular file by mapping it into memory
// rather than copying it into a string: for a real tokenizer.json (6 MB)
// that saves ~3 ms of the command's ~40 (the copy, and the first touch of
// every page of a fresh buffer). Anything unusual (a pipe, an empty file, a
// failed call, a directory, a file past the §ERR.4 limit) goes to
// LoadTokenizerJson, whose bounded read names the file and the problem.
Tokenizer LoadTokenizer(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return LoadTokenizerJson(path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      static_cast<uint64_t>(st.st_size) > InputSizeLimit(InputKind::kTokenizer)) {
    ::close(fd);
    return LoadTokenizerJson(path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;  // map every page now, in one call
#endif
  void* data = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) return LoadTokenizerJson(path);
  struct Unmap {
    void* data;
    size_t size;
    ~Unmap() { ::munmap(data, size); }
  } unmap{data, size};
  return ParseTokenizerJson(std::string_view(static_cast<const char*>(data), size), path);
}

}  // namespace

TokenMap BuildTokenMapFromFile(const std::string& path) {
  // Progress on stderr, only when the build takes more than a second.
  const auto start = std::chrono::steady_clock::now();
  bool reported = false;
  auto progress = [&](int64_t done, int64_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed < 1.0 && !(reported && done == total)) return;
    std::cerr << "token-map: " << done << " / " << total << " ids (" << static_cast<int>(elapsed) << " s)\n";
    reported = true;
  };
  const Tokenizer tokenizer = LoadTokenizer(path);
  return BuildTokenMap(tokenizer, nullptr, progress);
}

namespace {

// `doc` with a last key "map" holding `map`, as nlohmann's dump(1) writes
// it: doc is dumped by nlohmann, and the map appended in the same layout
// (one entry a line, indented by two spaces) by a loop.
std::string WithMap(const ojson& doc, const std::vector<int64_t>& map) {
  std::string text = doc.dump(1);  // "{\n \"tokens\": ...\n}"
  text.resize(text.size() - 2);    // without its closing "\n}"
  text.reserve(text.size() + 16 + 12 * map.size());
  text += ",\n \"map\": [";
  char number[24];
  for (size_t i = 0; i < map.size(); ++i) {
    text += i == 0 ? "\n  " : ",\n  ";
    const auto end = std::to_chars(number, number + sizeof number, map[i]).ptr;
    text.append(number, end);
  }
  text += map.empty() ? "]\n}" : "\n ]\n}";
  return text;
}

}  // namespace

void AddTokenMapCommand(CLI::App& app) {
  struct State {
    std::string tokenizer, config, profile, out;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("token-map", "Build the compressed token map from a Hugging Face tokenizer.json");
  cmd->add_option("--tokenizer", s->tokenizer, "tokenizer.json (byte-level BPE, ByteLevel decoder)")->required();
  cmd->add_option("--config", s->config,
                  "config.json: v4.1 refuses a map whose size is not engram_compressed_vocab_size; adds the pad");
  cmd->add_option("--profile", s->profile, "Override the detected profile")->check(CLI::IsMember({"v4.1", "demo-v1"}));
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->callback([s] {
    const TokenMap tm = BuildTokenMapFromFile(s->tokenizer);
    ojson doc;
    doc["tokens"] = tm.tokens();
    doc["compressed_size"] = tm.compressed_size;
    doc["sha256"] = TokenMapDigest(tm);
    if (!s->config.empty()) {
      std::optional<Profile> override_profile;
      if (!s->profile.empty()) override_profile = ParseProfile(s->profile);
      const EngramConfig config = LoadConfig(s->config, override_profile);
      const int64_t pad = CheckTokenMapForConfig(tm, config);  // §TOK.4
      doc["profile"] = std::string(ProfileName(config.profile));
      doc["pad"] = {{"raw", config.pad_id}, {"compressed", pad}};
    }
    // What Emit(doc with "map": tm.map) writes, byte for byte, without a
    // JSON value per entry (129k of them for a real tokenizer).
    const std::string text = WithMap(doc, tm.map) + "\n";
    if (s->out.empty()) {
      std::cout << text;
    } else {
      WriteFileAtomic(s->out, text);
    }
  });
}

}  // namespace engram::cli

// The bad-input catalogue (spec/bad_inputs.md §ERR.2), one test per row.
//
// Each row of conformance/badinput/catalogue.json describes the files to
// create, the `engram` command line to run on them and what must happen: the
// exit status, substrings the error must contain (naming the file, field and
// value), the output files that must not exist, and that the working
// directory holds nothing else afterwards (no partial output, no leftover
// temporary file; compared recursively, so a leftover in a subdirectory counts
// too). Rows of the `limits` area check a peak-memory bound instead (§ERR.3).
// A row's `fileSizeLimitBytes` makes every write of the command past that size
// fail with EFBIG (RLIMIT_FSIZE, SIGXFSZ ignored), as on a full disk. The
// expected strings are written from the rule each row documents, not copied
// from the implementation's output. A file's text (and a replace/append edit)
// may hold "{deep:N}": N '[' then N ']', JSON nested N deep (§ERR.6) without
// megabytes of brackets in the catalogue; a file may be a FIFO ("fifo": true)
// or a symbolic link ("symlink": target), for the special files of §VEC.9.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "base/hex.h"
#include "base/sha256.h"
#include "base/version.h"
#include "reference/token_map.h"
#include "vectors/random_cases.h"
#include "testutil/sanitized.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRepo = ENGRAM_SOURCE_DIR;

using engram::testutil::kSanitized;  // §ERR.3 bounds are checked in plain builds only
const fs::path kCatalogue = kRepo / "conformance/badinput/catalogue.json";

json LoadCatalogue() {
  std::ifstream in(kCatalogue);
  if (!in) return json::array();
  return json::parse(in)["rows"];
}

const json& Catalogue() {
  static const json rows = LoadCatalogue();
  return rows;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Spit(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A row's file given as hex bytes; a catalogue row that spells them otherwise is a bug of the row.
std::string FromHex(const std::string& hex) {
  const std::optional<std::string> bytes = engram::BytesOfHex(hex);
  if (!bytes) throw std::runtime_error("catalogue: '" + hex + "' is not lower-case hex bytes");
  return *bytes;
}

// The number of tests in the committed vectors/v1/<suite>.json, counted from
// the file (not by the runner), minus `less`: rows that state a suite's
// counts say {tests:SUITE} so that appending vectors does not edit them.
std::string TestsIn(const std::string& suite, int less) {
  std::ifstream in(kRepo / "vectors" / "v1" / (suite + ".json"));
  const nlohmann::json doc = nlohmann::json::parse(in);
  size_t n = 0;
  for (const nlohmann::json& group : doc.at("testGroups")) n += group.at("tests").size();
  return std::to_string(static_cast<long long>(n) - less);
}

std::string Expand(const std::string& s) {
  // {repo}: the source tree; {plugin}: the reference C-ABI plug-in;
  // {plugins}: the directory of the test plug-ins built beside it; {spec}, {specVersion}: the spec
  // version; {randomVersion}: the random generators' (a shard report of this build).
  static const std::string plugins = fs::path(ENGRAM_PLUGIN).parent_path().string();
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"{repo}", kRepo.string()},          {"{plugins}", plugins},
      {"{plugin}", ENGRAM_PLUGIN},         {"{spec}", engram::kSpecVersion},
      {"{specVersion}", engram::kSpecVersion}, {"{randomVersion}", engram::vectors::kRandomVersion}};
  std::string out;
  for (size_t at = 0; at < s.size();) {
    // {tests:SUITE} / {tests:SUITE-K}: the number of tests in the committed
    // vectors/v1/SUITE.json (minus K), counted from the file (TestsIn).
    if (s.compare(at, 7, "{tests:") == 0) {
      const size_t end = s.find('}', at);
      std::string name = s.substr(at + 7, end - at - 7);
      int less = 0;
      if (const size_t dash = name.find('-'); dash != std::string::npos) {
        less = std::stoi(name.substr(dash + 1));
        name = name.substr(0, dash);
      }
      out += TestsIn(name, less);
      at = end + 1;
      continue;
    }
    bool replaced = false;
    for (const auto& [key, value] : vars) {
      if (s.compare(at, key.size(), key) == 0) {
        out += value;
        at += key.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(s[at++]);
  }
  return out;
}

// "{deep:N}" -> N '[' then N ']' (§ERR.6 rows: a document nested N deep).
std::string Deep(const std::string& s) {
  static const std::string kOpen = "{deep:";
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = s.find(kOpen, at)) != std::string::npos;) {
    const size_t close = s.find('}', hit);
    if (close == std::string::npos) throw std::runtime_error("{deep:N} without its '}'");
    const size_t n = std::stoul(s.substr(hit + kOpen.size(), close - hit - kOpen.size()));
    out += s.substr(at, hit - at);
    out += std::string(n, '[');
    out += std::string(n, ']');
    at = close + 1;
  }
  return out + s.substr(at);
}

// Every test of the groups of `type` loses `keys` (a vectors directory whose
// tests say nothing, §CONF.4); the file keeps its key order (§CONF.1).
std::string EraseTestKeys(const std::string& bytes, const json& spec) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(bytes);
  for (auto& group : doc["testGroups"]) {
    if (group["type"].get<std::string>() != spec["type"].get<std::string>()) continue;
    for (auto& t : group["tests"]) {
      for (const json& k : spec["keys"]) t.erase(k.get<std::string>());
    }
  }
  return doc.dump(1) + "\n";
}

// Byte-level edits shared by copied files and files inside copied directories.
std::string Edit(std::string bytes, const json& spec) {
  if (spec.contains("patch")) bytes = json::parse(bytes).patch(spec["patch"]).dump(1) + "\n";
  if (spec.contains("eraseTestKeys")) bytes = EraseTestKeys(bytes, spec["eraseTestKeys"]);
  if (spec.contains("replace")) {
    for (const json& pair : spec["replace"]) {
      const std::string from = Expand(pair[0]), to = Deep(pair[1]);
      const size_t at = bytes.find(from);
      if (at == std::string::npos) throw std::runtime_error("replace: '" + from + "' not found");
      bytes.replace(at, from.size(), to);
    }
  }
  if (spec.contains("flipByte")) {
    const size_t at = spec["flipByte"];
    bytes.at(at) = static_cast<char>(bytes.at(at) ^ 0x01);
  }
  if (spec.contains("truncate")) bytes.resize(spec["truncate"].get<size_t>());
  if (spec.contains("append")) bytes += Deep(spec["append"].get<std::string>());
  return bytes;
}

// A safetensors file: 8-byte little-endian header length, the JSON header,
// then `dataBytes` bytes of `fill`; `sparseDataBytes` instead makes the data
// section a hole of that size (a huge table that costs no disk);
// `headerLength` overrides the length field.
void WriteSafetensors(const fs::path& p, const json& spec) {
  const std::string header = spec["header"].dump();
  uint64_t n = spec.value("headerLength", static_cast<uint64_t>(header.size()));
  std::string bytes(8, '\0');
  for (int b = 0; b < 8; ++b) bytes[static_cast<size_t>(b)] = static_cast<char>(n >> (8 * b));
  bytes += header;
  bytes += std::string(spec.value("dataBytes", static_cast<size_t>(0)), static_cast<char>(spec.value("fill", 0)));
  Spit(p, bytes);
  if (spec.contains("sparseDataBytes")) fs::resize_file(p, 8 + header.size() + spec["sparseDataBytes"].get<uint64_t>());
}

void Materialize(const fs::path& dir, const std::string& name, const json& spec) {
  const fs::path p = dir / name;
  if (spec.contains("text")) {
    Spit(p, Deep(spec["text"].get<std::string>()));
  } else if (spec.value("fifo", false)) {
    fs::create_directories(p.parent_path());
    if (mkfifo(p.c_str(), 0644) != 0) throw std::runtime_error("mkfifo " + p.string() + ": " + std::strerror(errno));
  } else if (spec.contains("symlink")) {
    fs::create_directories(p.parent_path());
    fs::create_symlink(spec["symlink"].get<std::string>(), p);
  } else if (spec.contains("json")) {
    Spit(p, spec["json"].dump(1) + "\n");
  } else if (spec.contains("repeat")) {
    // A large file described by its pattern (a limit row's input, which the
    // catalogue should not hold byte for byte): prefix, unit × count, suffix.
    const json& r = spec["repeat"];
    std::string bytes = r.value("prefix", std::string());
    const std::string unit = r.at("unit");
    const size_t count = r.at("count");
    bytes.reserve(bytes.size() + unit.size() * count + 16);
    for (size_t i = 0; i < count; ++i) bytes += unit;
    bytes += r.value("suffix", std::string());
    Spit(p, bytes);
  } else if (spec.contains("hex")) {
    Spit(p, FromHex(spec["hex"]));
  } else if (spec.contains("safetensors")) {
    WriteSafetensors(p, spec["safetensors"]);
  } else if (spec.contains("from")) {
    // "expand": the file's placeholders ({specVersion}, ...) are this build's, before the edits (whose
    // `replace` patterns are expanded too).
    const std::string bytes = Slurp(kRepo / spec["from"].get<std::string>());
    Spit(p, Edit(spec.value("expand", false) ? Expand(bytes) : bytes, spec));
  } else if (spec.contains("fromDir")) {
    // A copy of a vectors directory with edits; `rehash` rewrites the
    // manifest lines of edited files so that only the edit itself is wrong.
    fs::copy(kRepo / spec["fromDir"].get<std::string>(), p, fs::copy_options::recursive);
    // (value() returns a copy: keep it alive while iterating.)
    const json edits = spec.value("edits", json::object()), removed = spec.value("remove", json::array());
    for (const auto& [rel, edit] : edits.items()) Spit(p / rel, Edit(Slurp(p / rel), edit));
    for (const json& rel : removed) fs::remove(p / rel.get<std::string>());
    if (spec.value("rehash", false)) {
      std::string manifest = Slurp(p / "MANIFEST.sha256");
      for (const auto& [rel, edit] : edits.items()) {
        const size_t at = manifest.find("  " + rel + "\n");
        if (at == std::string::npos || at < 64) throw std::runtime_error("rehash: " + rel + " not in the manifest");
        manifest.replace(at - 64, 64, engram::Sha256Hex(Slurp(p / rel)));
      }
      Spit(p / "MANIFEST.sha256", manifest);
    }
  } else {
    throw std::runtime_error("file '" + name + "': no content given");
  }
  if (spec.value("executable", false)) fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
}

// Everything under `dir`, as paths relative to it (directories with a
// trailing '/'), so that a leftover anywhere below counts.
std::set<std::string> Listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).generic_string();
    names.insert(e.is_directory() && !e.is_symlink() ? rel + "/" : rel);
  }
  return names;
}

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal or by the harness's timeout
  std::string how;
  std::string out, err;
  long max_rss_kib = 0;
};

// Runs the CLI with `args` in `dir` (stdin from `stdin_file` in `dir`, else
// /dev/null), waits at most
// `timeout`, and reports the exit status and the peak memory of the process
// tree (wait4 folds in the children the CLI reaped). A `file_size_limit`
// above 0 sets RLIMIT_FSIZE in the child, with SIGXFSZ ignored, so that a
// write past that many bytes fails with EFBIG as on a full disk.
Outcome RunCli(const fs::path& dir, const std::vector<std::string>& args, const std::string& stdin_file,
               std::chrono::seconds timeout, uint64_t file_size_limit, const json& env) {
  const fs::path out = dir.parent_path() / (dir.filename().string() + ".stdout");
  const fs::path err = dir.parent_path() / (dir.filename().string() + ".stderr");
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    int in = open(stdin_file.empty() ? "/dev/null" : stdin_file.c_str(), O_RDONLY);
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(o, 1);
    dup2(e, 2);
    // A row's "env": variables set for the command (a scheduler's shard, §CONF.9), {repo} expanded.
    for (const auto& [name, value] : env.items()) setenv(name.c_str(), Expand(value.get<std::string>()).c_str(), 1);
    if (file_size_limit > 0) {
      signal(SIGXFSZ, SIG_IGN);  // stays ignored across execv
      const rlimit limit{file_size_limit, file_size_limit};
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(125);
    }
    std::vector<char*> argv;
    static std::string cli = ENGRAM_CLI;
    argv.push_back(cli.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(cli.c_str(), argv.data());
    _exit(127);
  }
  Outcome r;
  int status = 0;
  rusage usage{};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      r.how = "killed by the harness after " + std::to_string(timeout.count()) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (r.how.empty()) {
    if (WIFEXITED(status)) {
      r.exit_code = WEXITSTATUS(status);
      r.how = "exit " + std::to_string(r.exit_code);
    } else {
      r.how = "signal " + std::to_string(WTERMSIG(status));
    }
  }
  r.max_rss_kib = usage.ru_maxrss;
  r.out = Slurp(out);
  r.err = Slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

// A row, printed by its id only (gtest prints parameters of failing tests).
struct Row {
  json j;
};
void PrintTo(const Row& row, std::ostream* os) { *os << row.j["id"].get<std::string>(); }

std::vector<Row> Rows() {
  std::vector<Row> out;
  for (const json& j : Catalogue()) out.push_back({j});
  return out;
}

class BadInput : public testing::TestWithParam<Row> {};

// A row's scratch directory, removed when the test ends however it ends (a
// failed ASSERT returns early). ENGRAM_KEEP_TEST_DIRS=1 keeps the directory of
// a failing row for inspection (its path is printed).
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(fs::path p) : path(std::move(p)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    const char* keep = std::getenv("ENGRAM_KEEP_TEST_DIRS");
    if (keep != nullptr && *keep != '\0' && testing::Test::HasFailure()) {
      std::cout << "kept " << path << " (ENGRAM_KEEP_TEST_DIRS)\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST_P(BadInput, Row) {
  const json& row = GetParam().j;
  const std::string id = row["id"];
  SCOPED_TRACE(id + ": " + row["case"].get<std::string>());
  // A row that exists for its memory bound (long runs whose paths other rows
  // already walk) is not run again under the sanitizers, where the bound is
  // not checked and the run takes several times as long.
  if (kSanitized && row.value("skipSanitized", false)) GTEST_SKIP() << id << ": a memory bound, checked in plain builds";
  const ScratchDir scratch(fs::temp_directory_path() / ("engram_bad_" + std::to_string(getpid()) + "_" + id));
  const fs::path& dir = scratch.path;
  const json files = row.value("files", json::object());
  for (const auto& [name, spec] : files.items()) Materialize(dir, name, spec);
  const std::set<std::string> before = Listing(dir);

  std::vector<std::string> args;
  for (const json& a : row["args"]) args.push_back(Expand(a));
  const json& expect = row["expect"];
  const Outcome r = RunCli(dir, args, row.value("stdin", std::string()), std::chrono::seconds(row.value("timeoutSeconds", 120)),
                           row.value("fileSizeLimitBytes", uint64_t{0}), row.value("env", json::object()));
  const std::string shown = "\n--- stderr:\n" + r.err.substr(0, 4000) + "\n--- stdout (tail):\n" +
                            (r.out.size() > 2000 ? r.out.substr(r.out.size() - 2000) : r.out);

  // Never a crash: a signal (ASan aborts, segfaults) is a failure whatever the row expects.
  ASSERT_GE(r.exit_code, 0) << r.how << shown;
  EXPECT_EQ(r.exit_code, expect["exit"].get<int>()) << shown;
  const json want_err = expect.value("stderr", json::array()), want_out = expect.value("stdout", json::array());
  for (const json& s : want_err) EXPECT_NE(r.err.find(Expand(s)), std::string::npos) << "stderr lacks: " << s << shown;
  for (const json& s : want_out) EXPECT_NE(r.out.find(Expand(s)), std::string::npos) << "stdout lacks: " << s << shown;
  // What must not be said (a verdict of OK on a run that is not, §CONF.4).
  for (const json& s : expect.value("stdoutLacks", json::array())) {
    EXPECT_EQ(r.out.find(Expand(s)), std::string::npos) << "stdout must not say: " << s << shown;
  }
  if (expect["exit"].get<int>() != 0) {
    // The message is an error message, on stderr, not a stack dump (rows
    // whose outcome is a report, such as a conformance run with failing
    // tests, state what stdout must say instead).
    if (want_out.empty()) EXPECT_FALSE(r.err.empty()) << "no error message" << shown;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << shown;
    EXPECT_EQ(r.err.find("AddressSanitizer"), std::string::npos) << shown;
    EXPECT_EQ(r.err.find("runtime error:"), std::string::npos) << shown;  // UBSan
  }
  // No partial output and no leftover temporary file: the directory holds
  // what the row created plus exactly the outputs it declares.
  std::set<std::string> expected_listing = before;
  const json creates = expect.value("creates", json::array());
  for (const json& f : creates) expected_listing.insert(f.get<std::string>());
  const std::set<std::string> after = Listing(dir);
  EXPECT_EQ(after, expected_listing) << "files in the working directory differ from the declared outputs" << shown;
  const json file_contains = expect.value("fileContains", json::object());
  for (const auto& [name, needles] : file_contains.items()) {
    const std::string text = Slurp(dir / name);
    for (const json& n : needles) EXPECT_NE(text.find(n.get<std::string>()), std::string::npos) << name << " lacks: " << n;
  }
  if (expect.contains("maxRssMiB") && kSanitized) {
    std::cout << id << ": peak RSS " << r.max_rss_kib / 1024 << " MiB (not checked: sanitizer shadow memory)\n";
  } else if (expect.contains("maxRssMiB")) {
    EXPECT_LE(r.max_rss_kib, expect["maxRssMiB"].get<long>() * 1024) << "peak RSS " << r.max_rss_kib / 1024 << " MiB" << shown;
    std::cout << id << ": peak RSS " << r.max_rss_kib / 1024 << " MiB (bound " << expect["maxRssMiB"] << " MiB)\n";
    RecordProperty("peak_rss_kib", std::to_string(r.max_rss_kib));
  }
}

std::string RowName(const testing::TestParamInfo<Row>& info) {
  std::string name = info.param.j["id"];
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, testing::ValuesIn(Rows()), RowName);

// The catalogue itself: at least 40 bad inputs across every area the issue
// names, unique ids, every row documented.
TEST(BadInputCatalogue, CoversEveryArea) {
  ASSERT_TRUE(fs::exists(kCatalogue)) << kCatalogue;
  std::set<std::string> ids, areas;
  int bad = 0;
  for (const json& row : Catalogue()) {
    EXPECT_TRUE(ids.insert(row["id"].get<std::string>()).second) << "duplicate id " << row["id"];
    areas.insert(row["area"].get<std::string>());
    for (const char* key : {"case", "rule", "args", "expect"}) EXPECT_TRUE(row.contains(key)) << row["id"] << " lacks " << key;
    if (row["expect"]["exit"].get<int>() != 0) ++bad;
  }
  EXPECT_GE(bad, 40);
  for (const char* area : {"config.json", "tokenizer.json", "token map", "safetensors table", "vector files", "history",
                           "contract", "command line", "protocol", "limits"}) {
    EXPECT_TRUE(areas.count(area)) << "no row for " << area;
  }
}

}  // namespace

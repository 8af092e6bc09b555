// Tests of §ERR.4 (bounded reads) and §ERR.5 (unique JSON keys).
#include "reference/input_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const engram::Error& e) {
    return e.what();
  }
  return "";
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("engram_input_files_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(ReadInputFile, ReadsAFileWhole_ERR4) {
  TempDir dir;
  std::ofstream(dir.path / "c.json") << "{\"a\": 1}";
  EXPECT_EQ(engram::ReadInputFile(dir.path / "c.json", engram::InputKind::kConfig), "{\"a\": 1}");
}

TEST(ReadInputFile, RefusesADeviceThatNeverEndsAtTheLimit_ERR4) {
  // /dev/zero has no size: it is read in pieces and refused one byte past 16 MiB.
  const std::string e = ErrorOf([] { engram::ReadInputFile("/dev/zero", engram::InputKind::kConfig); });
  EXPECT_THAT(e, HasSubstr("/dev/zero: more than 16 MiB, the limit for a configuration file (§ERR.4)"));
}

TEST(ReadInputFile, RefusesARegularFileAboveTheLimitBeforeReadingIt_ERR4) {
  TempDir dir;
  const fs::path big = dir.path / "MANIFEST.sha256";
  { std::ofstream(big) << "x"; }
  fs::resize_file(big, (uint64_t{1} << 20) + 1);  // sparse: the size is checked, nothing is read
  const std::string e = ErrorOf([&] { engram::ReadInputFile(big, engram::InputKind::kManifest); });
  EXPECT_THAT(e, HasSubstr("1048577 bytes is larger than 1 MiB, the limit for a manifest"));
  // Exactly at the limit is fine.
  fs::resize_file(big, uint64_t{1} << 20);
  EXPECT_EQ(engram::ReadInputFile(big, engram::InputKind::kManifest).size(), size_t{1} << 20);
}

TEST(ReadInputFile, NamesADirectoryAndAMissingFile_ERR4) {
  TempDir dir;
  EXPECT_THAT(ErrorOf([&] { engram::ReadInputFile(dir.path, engram::InputKind::kTokenizer); }),
              HasSubstr(dir.path.string() + ": is a directory, not a tokenizer file"));
  EXPECT_THAT(ErrorOf([&] { engram::ReadInputFile(dir.path / "none.json", engram::InputKind::kConfig); }),
              HasSubstr("none.json: cannot open for reading"));
}

TEST(ReadInputFile, EveryKindHasALimitAndAName_ERR4) {
  for (auto k : {engram::InputKind::kConfig, engram::InputKind::kTokenizer, engram::InputKind::kTokenMap,
                 engram::InputKind::kContract, engram::InputKind::kHistory, engram::InputKind::kVectorFile,
                 engram::InputKind::kManifest, engram::InputKind::kExpectFail, engram::InputKind::kFusionInput}) {
    EXPECT_GE(engram::InputSizeLimit(k), uint64_t{1} << 20);
    EXPECT_LE(engram::InputSizeLimit(k), uint64_t{512} << 20);
    EXPECT_THAT(engram::InputKindName(k), HasSubstr(k == engram::InputKind::kManifest ? "manifest" : "file"));
  }
}

TEST(ParseJson, RefusesARepeatedKeyNamingItsObject_ERR5) {
  EXPECT_THAT(ErrorOf([] { engram::ParseJson(R"({"engram_pad_id": 2, "engram_pad_id": 5})", "cfg.json"); }),
              HasSubstr("cfg.json: duplicate key 'engram_pad_id' in the top-level object"));
  EXPECT_THAT(ErrorOf([] { engram::ParseJson(R"({"text_config": {"a": 1, "b": 2, "a": 3}})", "cfg.json"); }),
              HasSubstr("duplicate key 'a' in the object at text_config"));
  EXPECT_THAT(ErrorOf([] { engram::ParseOrderedJson(R"({"g": [{"x": 1}, 5, {"y": [1, {"k": 1, "k": 2}]}]})", "v.json"); }),
              HasSubstr("duplicate key 'k' in the object at g[2].y[1]"));
}

TEST(ParseJson, KeysMayRepeatInDifferentObjects_ERR5) {
  const nlohmann::json j = engram::ParseJson(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})", "t");
  EXPECT_EQ(j["c"][1]["x"], 4);
  EXPECT_EQ(engram::ParseOrderedJson(R"({"z": 1, "a": 2})", "t").begin().key(), "z");  // order kept
}

TEST(ParseJson, NamesMalformedJsonAndItsPosition_ERR5) {
  EXPECT_THAT(ErrorOf([] { engram::ParseJson("{\"a\": ", "c.json"); }), HasSubstr("c.json: malformed JSON"));
  EXPECT_THAT(ErrorOf([] { engram::ParseJson("{\"a\": 1e999}", "c.json"); }), HasSubstr("c.json: malformed JSON"));
}

// A random JSON value without repeated keys (keys drawn from a small set so
// that nested objects often share them).
nlohmann::json RandomValue(int depth) {
  const int kind = *rc::gen::inRange(0, depth > 0 ? 5 : 3);
  if (kind == 0) return *rc::gen::inRange<int64_t>(-1000, 1000);
  if (kind == 1) return *rc::gen::element<std::string>("a", "b", "", "é");
  if (kind == 2) return nullptr;
  if (kind == 3) {
    nlohmann::json a = nlohmann::json::array();
    const int n = *rc::gen::inRange(0, 4);
    for (int i = 0; i < n; ++i) a.push_back(RandomValue(depth - 1));
    return a;
  }
  nlohmann::json o = nlohmann::json::object();
  for (const std::string& k : *rc::gen::container<std::set<std::string>>(rc::gen::element<std::string>("x", "y", "z", "w"))) {
    o[k] = RandomValue(depth - 1);
  }
  return o;
}

// §ERR.5 Documents without repeated keys parse exactly as nlohmann parses
// them; inserting a repeat of any key of any object makes them refused.
RC_GTEST_PROP(ParseJson, AcceptsUniqueKeysAndRefusesAnyRepeat_ERR5, ()) {
  nlohmann::json doc = RandomValue(3);
  doc = nlohmann::json{{"w", doc}, {"v", RandomValue(2)}};  // at least one object with keys
  const std::string text = doc.dump();
  RC_ASSERT(engram::ParseJson(text, "t") == nlohmann::json::parse(text));
  // Repeat the first key of a random object of the text: `{"k":` -> `{"k":0,"k":`.
  std::vector<size_t> objects;
  for (size_t at = text.find("{\""); at != std::string::npos; at = text.find("{\"", at + 1)) objects.push_back(at);
  const size_t at = objects[*rc::gen::inRange<size_t>(0, objects.size())];
  const size_t colon = text.find("\":", at);
  const std::string key = text.substr(at + 1, colon + 2 - (at + 1));
  const std::string repeated = text.substr(0, at + 1) + key + "0," + text.substr(at + 1);
  const std::string e = ErrorOf([&] { engram::ParseJson(repeated, "t"); });
  RC_ASSERT(e.find("t: duplicate key '" + key.substr(1, key.size() - 3) + "'") != std::string::npos);
}

}  // namespace

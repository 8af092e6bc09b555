// §ERR.6 The nesting-depth check that runs before every JSON parse.
#include "base/json_depth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace {

using testing::HasSubstr;

std::string Nested(size_t n) { return std::string(n, '[') + std::string(n, ']'); }

std::string ErrorOf(const std::string& text) {
  try {
    engram::CheckJsonDepth(text, "in.json");
  } catch (const engram::Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonDepth, AcceptsTheLimitAndRefusesOneMoreNamingSourceAndDepth_ERR6) {
  EXPECT_EQ(ErrorOf(Nested(engram::kMaxJsonDepth)), "");
  EXPECT_EQ(ErrorOf("{\"a\": " + Nested(engram::kMaxJsonDepth - 1) + "}"), "");
  const std::string e = ErrorOf(Nested(engram::kMaxJsonDepth + 1));
  EXPECT_THAT(e, HasSubstr("in.json: JSON nested deeper than 256 levels"));
  EXPECT_THAT(e, HasSubstr("opens at byte 256"));
  EXPECT_THAT(ErrorOf("{\"a\": " + Nested(1000000) + "}"), HasSubstr("nested deeper than 256"));
}

TEST(JsonDepth, DepthIsNestingNotTheNumberOfContainers_ERR6) {
  std::string siblings = "[";
  for (int i = 0; i < 10000; ++i) siblings += (i ? "," : "") + Nested(10);
  EXPECT_EQ(ErrorOf(siblings + "]"), "");
}

TEST(JsonDepth, BracketsInsideStringsDoNotCount_ERR6) {
  EXPECT_EQ(ErrorOf("[\"" + std::string(1000, '[') + "\"]"), "");
  // An escaped quote does not end the string; an escaped backslash does not escape the quote after it.
  EXPECT_EQ(ErrorOf("[\"\\\"" + std::string(1000, '{') + "\"]"), "");
  EXPECT_THAT(ErrorOf("[\"\\\\\"" + Nested(300) + "]"), HasSubstr("nested deeper than 256"));
}

}  // namespace

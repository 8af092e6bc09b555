#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace {

// Known answers from FIPS 180-2 (appendix B) and the empty message.
TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(engram::Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(engram::Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(engram::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalEqualsOneShotWhateverTheSplit) {
  const std::string data = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  for (size_t cut = 0; cut <= data.size(); cut += 7) {
    engram::Sha256 h;
    h.Update(data.data(), cut);
    h.Update(data.data() + cut, data.size() - cut);
    EXPECT_EQ(h.HexDigest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") << "cut " << cut;
  }
}

TEST(Sha256, TheDigestIsTakenOnce) {
  engram::Sha256 h;
  h.Update("abc", 3);
  EXPECT_EQ(h.HexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(h.HexDigest(), engram::Error);
  EXPECT_THROW(h.Update("x", 1), engram::Error);
}

}  // namespace

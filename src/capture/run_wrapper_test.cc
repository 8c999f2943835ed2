#include "capture/run_wrapper.h"

#include <gtest/gtest.h>

namespace cairn::capture {
namespace {

TEST(RunWrapperTest, ShellJoinQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(ShellJoin({"python", "train.py", "--lr=0.1"}), "python train.py --lr=0.1");
  EXPECT_EQ(ShellJoin({"sh", "-c", "echo $HOME; exit 1"}), "sh -c 'echo $HOME; exit 1'");
  EXPECT_EQ(ShellJoin({"echo", "it's", ""}), "echo 'it'\\''s' ''");
}

TEST(RunWrapperTest, ParseKeyValueSplitsAtTheFirstEquals) {
  auto kv = ParseKeyValue("expr=a=b", "-p");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "expr");
  EXPECT_EQ(kv->second, "a=b");
  EXPECT_EQ(ParseKeyValue("empty=", "-p")->second, "");
  EXPECT_FALSE(ParseKeyValue("novalue", "-p").ok());
  EXPECT_FALSE(ParseKeyValue("=v", "--tag").ok());
  EXPECT_NE(ParseKeyValue("x", "--tag").status().message().find("--tag"), std::string::npos);
}

}  // namespace
}  // namespace cairn::capture

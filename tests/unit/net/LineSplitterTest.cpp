#include "net/LineSplitter.h"

#include <gtest/gtest.h>

#include <vector>

namespace leasehold::net {
namespace {

struct Collect {
  std::vector<std::string> lines;
  LineSplitter::LineCallback callback() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

TEST(LineSplitterTest, SplitsLinesAcrossAndWithinPieces) {
  LineSplitter splitter;
  Collect out;
  EXPECT_TRUE(splitter.feed("one\ntw", out.callback()));
  EXPECT_EQ(splitter.partial(), "tw");
  EXPECT_TRUE(splitter.feed("o\nthree\nfo", out.callback()));
  EXPECT_TRUE(splitter.feed("u", out.callback()));
  EXPECT_TRUE(splitter.feed("r\r\n\n", out.callback()));
  EXPECT_EQ(out.lines, (std::vector<std::string>{"one", "two", "three", "four", ""}));
  EXPECT_EQ(splitter.partial(), "");
}

TEST(LineSplitterTest, CarriageReturnSplitAcrossPieces) {
  LineSplitter splitter;
  Collect out;
  splitter.feed("abc\r", out.callback());
  splitter.feed("\n", out.callback());
  EXPECT_EQ(out.lines, (std::vector<std::string>{"abc"}));
}

TEST(LineSplitterTest, OverlongLineIsAnError) {
  LineSplitter splitter(8);
  Collect out;
  EXPECT_TRUE(splitter.feed("12345678\n", out.callback()));
  EXPECT_TRUE(splitter.feed("1234", out.callback()));
  EXPECT_FALSE(splitter.feed("567890", out.callback()));
  EXPECT_TRUE(splitter.overflowed());
  EXPECT_FALSE(splitter.feed("\nok\n", out.callback()));
  EXPECT_EQ(out.lines, (std::vector<std::string>{"12345678"}));
  splitter.reset();
  EXPECT_TRUE(splitter.feed("ok\n", out.callback()));
  EXPECT_EQ(out.lines.back(), "ok");
  EXPECT_FALSE(splitter.feed("123456789\n", out.callback()));
}

TEST(LineSplitterTest, ByteByByte) {
  LineSplitter splitter;
  Collect out;
  const std::string text = "{\"a\":1}\n{\"b\":2}\n";
  for (char c : text)
    splitter.feed(std::string_view(&c, 1), out.callback());
  EXPECT_EQ(out.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
}

}  // namespace
}  // namespace leasehold::net

// display_text: what an artifact's string looks like on a terminal or in a text report.

#include "core/model/base/display_text.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace {

using gparity::model::append_display_text;
using gparity::model::display_lines;
using gparity::model::display_text;
using gparity::model::is_display_safe;
using gparity::model::shown;

bool has_control_byte(std::string_view s) {
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F) return true;
  }
  return false;
}

TEST(DisplayText, PrintableAsciiAndUtf8AreKept) {
  for (const std::string s : {"", "a", "layers.0.attention.wq.weight", "aten.mm.default(x, y)", "back\\slash",
                              "caf\xc3\xa9",       // U+00E9
                              "\xc2\xa0",          // U+00A0: just past C1
                              "\xe2\x82\xac 100",  // U+20AC
                              "\xed\x9f\xbf",      // U+D7FF: last before surrogates
                              "\xee\x80\x80",      // U+E000
                              "\xef\xbb\xbf",      // U+FEFF
                              "\xf0\x9f\x98\x80",  // U+1F600
                              "\xf4\x8f\xbf\xbf",  // U+10FFFF
                              "a long name, longer than eight bytes, with \xce\xbb in the middle"}) {
    EXPECT_TRUE(is_display_safe(s)) << s;
    EXPECT_EQ(display_text(s), s);
  }
}

TEST(DisplayText, C0ControlsAndDelAreEscaped) {
  EXPECT_EQ(display_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(display_text("\x01\x07\x08\x0b\x0c\x1b\x1f"), "\\x01\\x07\\x08\\x0b\\x0c\\x1b\\x1f");
  EXPECT_EQ(display_text("x\x7fy"), "x\\x7fy");
  // A string from an artifact never breaks a report's lines.
  EXPECT_EQ(display_text("one\ntwo\r\tthree"), "one\\ntwo\\r\\tthree");
  EXPECT_FALSE(is_display_safe("tab\there"));
  for (int b = 0; b < 0x20; ++b) {
    const std::string in(1, static_cast<char>(b));
    EXPECT_FALSE(is_display_safe(in)) << b;
    EXPECT_FALSE(has_control_byte(display_text(in))) << b;
  }
}

TEST(DisplayText, TerminalEscapeSequencesCannotReachTheTerminal) {
  // OSC retitle (ended by BEL), then clear screen.
  const std::string hostile = "\x1b]0;title\x07\x1b[2J";
  EXPECT_EQ(display_text(hostile), "\\x1b]0;title\\x07\\x1b[2J");
  // The same in the middle of a word-at-a-time scan (after 8 and 16 plain bytes).
  EXPECT_EQ(display_text("12345678" + hostile), "12345678\\x1b]0;title\\x07\\x1b[2J");
  EXPECT_EQ(display_text("1234567812345678\x9b"), "1234567812345678\\x9b");
  EXPECT_EQ(display_text("abcdefg\x1b"), "abcdefg\\x1b");
}

TEST(DisplayText, C1ControlsAreEscapedAsTheirBytes) {
  // U+009B (CSI) is one byte on a terminal in 8-bit mode; U+0085 (NEL) a line break elsewhere.
  EXPECT_EQ(display_text("a\xc2\x9b"
                         "2Jb"),
            "a\\xc2\\x9b2Jb");
  EXPECT_EQ(display_text("\xc2\x80\xc2\x85\xc2\x9f"), "\\xc2\\x80\\xc2\\x85\\xc2\\x9f");
  EXPECT_FALSE(is_display_safe("\xc2\x85"));
}

TEST(DisplayText, InvalidUtf8BytesAreEscaped) {
  EXPECT_EQ(display_text("\x80"), "\\x80");  // stray continuation byte
  EXPECT_EQ(display_text("\x9b"
                         "2J"),
            "\\x9b2J");                               // raw 8-bit CSI
  EXPECT_EQ(display_text("ab\xc3"), "ab\\xc3");       // truncated at the end
  EXPECT_EQ(display_text("\xc3x"), "\\xc3x");         // continuation missing
  EXPECT_EQ(display_text("\xe2\x82"), "\\xe2\\x82");  // truncated 3-byte sequence
  EXPECT_EQ(display_text("\xfe\xff"), "\\xfe\\xff");  // never in UTF-8
  EXPECT_EQ(display_text("\xf5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");
  EXPECT_EQ(display_text("caf\xe9"), "caf\\xe9");  // Latin-1, not UTF-8
}

TEST(DisplayText, OverlongSurrogateAndOutOfRangeFormsAreEscaped) {
  EXPECT_EQ(display_text("\xc0\x80"), "\\xc0\\x80");                    // overlong NUL
  EXPECT_EQ(display_text("\xc1\xbf"), "\\xc1\\xbf");                    // overlong DEL
  EXPECT_EQ(display_text("\xe0\x80\x9b"), "\\xe0\\x80\\x9b");           // overlong CSI
  EXPECT_EQ(display_text("\xe0\x9f\xbf"), "\\xe0\\x9f\\xbf");           // overlong U+07FF
  EXPECT_EQ(display_text("\xf0\x80\x80\x80"), "\\xf0\\x80\\x80\\x80");  // overlong 4-byte
  EXPECT_EQ(display_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // U+D800
  EXPECT_EQ(display_text("\xed\xbf\xbf"), "\\xed\\xbf\\xbf");           // U+DFFF
  EXPECT_EQ(display_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // U+110000
  // Valid text around an invalid byte stays as it is.
  EXPECT_EQ(display_text("\xce\xbb\xff\xce\xbb"), "\xce\xbb\\xff\xce\xbb");
}

TEST(DisplayText, LinesKeepLineFeedsOnly) {
  EXPECT_EQ(display_lines("3 graphs match:\n  --rank 0\n  --rank 1"),
            "3 graphs match:\n  --rank 0\n  --rank 1");
  EXPECT_EQ(display_lines("a\nb\x1b[2J\r"), "a\nb\\x1b[2J\\r");
}

TEST(DisplayText, AppendAndStreamAgreeWithDisplayText) {
  const std::string s = "node\x1b[31m \xc2\x9b \xff ok \xe2\x82\xac";
  std::string out = "prefix ";
  append_display_text(out, s);
  EXPECT_EQ(out, "prefix " + display_text(s));
  std::ostringstream os;
  os << shown(s) << '|' << shown("plain");
  EXPECT_EQ(os.str(), display_text(s) + "|plain");
  EXPECT_FALSE(has_control_byte(os.str()));
}

TEST(DisplayText, EveryByteAndPairGivesNoControlByte) {
  // Exhaustive over one and two bytes: whatever comes in, no control byte and no C1 form goes out,
  // and a safe input is returned unchanged.
  for (int a = 0; a < 256; ++a) {
    for (int b = -1; b < 256; ++b) {
      std::string in(1, static_cast<char>(a));
      if (b >= 0) in += static_cast<char>(b);
      const std::string out = display_text(in);
      ASSERT_FALSE(has_control_byte(out)) << a << ' ' << b;
      ASSERT_EQ(out.find("\xc2\x85"), std::string::npos);
      ASSERT_EQ(is_display_safe(in), out == in) << a << ' ' << b;
      ASSERT_TRUE(is_display_safe(out)) << a << ' ' << b;
    }
  }
}

}  // namespace

#include <catch2/catch.hpp>

#include "cli/table.hpp"

using namespace gaia::cli;

TEST_CASE("table: columns align, header first, no trailing blanks", "[table]") {
  Table t({"NAME", "STATE", "REASON"});
  t.add_row({"node-1", "Ready", ""});
  t.add_row({"datanode-10", "Cordoned", "maintenance"});
  CHECK(t.render() ==
        "NAME          STATE      REASON\n"
        "node-1        Ready\n"
        "datanode-10   Cordoned   maintenance\n");
}

TEST_CASE("table: width counts characters, not bytes or colour codes", "[table]") {
  CHECK(display_width("abc") == 3);
  CHECK(display_width("z\xc3\xbcrich") == 6);  // "zürich"
  CHECK(display_width("\033[32mok\033[0m") == 2);
  Table t({"A", "B"});
  t.add_row({"\033[32mok\033[0m", "x"});
  t.add_row({"long", "y"});
  CHECK(t.render() == "A      B\n\033[32mok\033[0m     x\nlong   y\n");
}

TEST_CASE("table: fitted to the width by cutting the widest column", "[table]") {
  Table t({"NAME", "LABELS"});
  t.add_row({"node-1", "disk=ssd,gpu-model=a100,rack=r1,zone=z1"});
  TableOptions o{30, true};
  std::string out = t.render(o);
  CHECK(out == "NAME     LABELS\nnode-1   disk=ssd,gpu-model=a…\n");
  for (size_t pos = 0; pos < out.size();) {
    size_t nl = out.find('\n', pos);
    CHECK(display_width(out.substr(pos, nl - pos)) <= 30);
    pos = nl + 1;
  }
  // Without truncation (a pipe) nothing is cut, whatever the width.
  CHECK(t.render(TableOptions{30, false}).find("zone=z1") != std::string::npos);
  // Columns never shrink below a readable minimum, even if the line stays too long.
  CHECK(t.render(TableOptions{5, true}).find("disk=…") != std::string::npos);
}

TEST_CASE("table: truncation keeps whole characters", "[table]") {
  CHECK(truncate_to_width("abcdef", 4) == "abc…");
  CHECK(truncate_to_width("abc", 4) == "abc");
  CHECK(truncate_to_width("\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc", 3) == "\xc3\xbc\xc3\xbc…");
  CHECK(display_width(truncate_to_width("\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc", 3)) == 3);
}

TEST_CASE("table: not a terminal means no limit and no truncation", "[table]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  TableOptions o = table_options_for(f);
  CHECK(o.max_width == 0);
  CHECK_FALSE(o.truncate);
  std::fclose(f);
}

TEST_CASE("table: a column at its floor lets the next widest give way", "[table]") {
  // INSTANCE-SUBNET cannot go below its header; LABELS, narrower at first, must still
  // shrink for the table to fit.
  Table t({"INSTANCE-SUBNET", "LABELS"});
  t.add_row({"10.0.128.0/24", "disk=ssd,zone=z1"});
  std::string out = t.render(TableOptions{25, true});
  CHECK(out == "INSTANCE-SUBNET   LABELS\n10.0.128.0/24     disk=s…\n");
}

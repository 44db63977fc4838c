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

TEST_CASE("table: on a narrow terminal the least useful columns go first, names stay whole", "[table]") {
  Table t({"NAME", "APP", "ROLE", "STATE", "REASON"});
  t.set_fit("NAME", ColumnFit{0, Fit::Keep});
  t.set_fit("APP", ColumnFit{2, Fit::Cut});
  t.set_fit("ROLE", ColumnFit{1, Fit::Cut});
  t.set_fit("REASON", ColumnFit{0, Fit::Wrap});
  t.set_fit("NO-SUCH-COLUMN", ColumnFit{9, Fit::Cut});  // Ignored.
  t.add_row({"0.datanode.hdfs.default", "hdfs", "datanode", "Pending", "0/3 nodes fit: 3 have too little cpu"});
  // Wide enough: everything, nothing changed.
  CHECK(t.render(TableOptions{200, true}) == t.render());
  // Narrower: APP goes first (priority 2), the reason wraps rather than being cut.
  std::string mid = t.render(TableOptions{80, true});
  CHECK(mid ==
        "NAME                      ROLE       STATE     REASON\n"
        "0.datanode.hdfs.default   datanode   Pending   0/3 nodes fit: 3 have too little\n"
        "                                               cpu\n");
  // Narrower still: ROLE too; the name and the state are never cut, the reason wraps
  // further.
  std::string narrow = t.render(TableOptions{50, true});
  CHECK(narrow ==
        "NAME                      STATE     REASON\n"
        "0.datanode.hdfs.default   Pending   0/3 nodes fit:\n"
        "                                    3 have too\n"
        "                                    little cpu\n");
  for (const auto& out : {mid, narrow}) CHECK(out.find("…") == std::string::npos);
  // A pipe gets everything whole whatever the width.
  CHECK(t.render(TableOptions{50, false}) == t.render());
}

TEST_CASE("table: wrapping breaks after spaces and commas, and inside a word only when it must", "[table]") {
  CHECK(wrap_to_width("short", 10) == std::vector<std::string>{"short"});
  CHECK(wrap_to_width("one two three four", 9) == std::vector<std::string>{"one two", "three", "four"});
  CHECK(wrap_to_width("a=1,b=2,c=3", 8) == std::vector<std::string>{"a=1,b=2,", "c=3"});
  CHECK(wrap_to_width("abcdefghij", 4) == std::vector<std::string>{"abcd", "efgh", "ij"});
  CHECK(wrap_to_width("z\xc3\xbcrich z\xc3\xbcrich", 6) == std::vector<std::string>{"z\xc3\xbcrich", "z\xc3\xbcrich"});
  for (const auto& line : wrap_to_width("a long message, with a verylongwordthatdoesnotfit in it", 10))
    CHECK(display_width(line) <= 10);
}

TEST_CASE("table: a table printed in parts keeps its columns and widths", "[table]") {
  auto part = [](const std::vector<std::string>& row) {
    Table t({"TIME", "REASON", "MESSAGE"});
    t.set_fit("TIME", ColumnFit{1, Fit::Cut});
    t.set_fit("REASON", ColumnFit{0, Fit::Keep});
    t.set_fit("MESSAGE", ColumnFit{0, Fit::Wrap});
    t.add_row(row);
    return t;
  };
  TableOptions o{40, true};
  Table first = part({"2024-01-01T10:00:00Z", "Scheduled", "placed on node-1"});
  TableLayout layout = first.layout(o);
  CHECK_FALSE(layout.shown[0]);  // TIME left out: 40 columns leave the message too little room.
  CHECK(first.render(o, layout, true) == "REASON      MESSAGE\nScheduled   placed on node-1\n");
  // A later, wider row keeps the columns; the message, the last column, narrows.
  Table second = part({"2024-01-01T10:00:01Z", "FailedScheduling", "0/3 nodes fit: each has too little cpu"});
  layout = second.layout(o, &layout);
  CHECK_FALSE(layout.shown[0]);
  std::string out = second.render(o, layout, false);
  CHECK(out ==
        "FailedScheduling   0/3 nodes fit: each\n"
        "                   has too little cpu\n");
}

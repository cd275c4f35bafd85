#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cerrno>
#include <cstdio>
#include <sys/stat.h>
#include <filesystem>
#include <fstream>
#include <thread>

#include "audit_log.h"
#include "test_util.h"

using namespace strata_audit;
using namespace strata_audit::testing;

namespace {

Record query(std::string_view text) {
  Record r;
  r.kind = EventKind::kQuery;
  r.command_class = "select";
  r.query = text;
  return r;
}

// "record_id":N of a JSON line, or -1.
long long record_id(const std::string &line) {
  const std::string key = "\"record_id\":";
  size_t p = line.find(key);
  if (p == std::string::npos) return -1;
  return std::stoll(line.substr(p + key.size()));
}

bool looks_complete(const std::string &line) {
  return line.rfind("{\"audit_record\":{", 0) == 0 && line.size() > 2 &&
         line.substr(line.size() - 2) == "}}" &&
         line.find("{\"audit_record\"", 1) == std::string::npos;
}

}  // namespace

class AuditLogStrategies : public ::testing::TestWithParam<Strategy> {};

TEST_P(AuditLogStrategies, ConcurrentWritersNeverInterleaveAndIdsIncrease) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = GetParam();
  o.buffer_size = 4096;  // small: forces waits and wrap-around
  o.server_id = 3;
  constexpr int kThreads = 8;
  // SYNCHRONOUS fsyncs every record: fewer of them keep the test fast.
  const int per_thread = GetParam() == Strategy::kSynchronous ? 40 : 500;
  const uint64_t total = kThreads * per_thread;
  {
    AuditLog log(o);
    std::string err;
    ASSERT_EQ(log.start(&err), 0) << err;
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&, t] {
        std::string text = "select " + std::string(static_cast<size_t>(t * 37 + 1), 'a' + t);
        for (int i = 0; i < per_thread; ++i) log.append(query(text));
      });
    }
    for (auto &t : ts) t.join();
    log.stop();
    const auto &st = log.stats();
    if (GetParam() == Strategy::kPerformance) {
      EXPECT_EQ(st.events_written + st.events_lost, total);
    } else {
      EXPECT_EQ(st.events_written, total);
      EXPECT_EQ(st.events_lost, 0u);
    }
  }
  const auto ls = lines(read_file(d.file("audit.log")));
  long long prev = 0;
  for (const auto &l : ls) {
    ASSERT_TRUE(looks_complete(l)) << l;
    const long long id = record_id(l);
    ASSERT_GT(id, prev);
    prev = id;
  }
  if (GetParam() != Strategy::kPerformance) {
    EXPECT_EQ(ls.size(), total);
    EXPECT_EQ(prev, static_cast<long long>(total));
  }
}

INSTANTIATE_TEST_SUITE_P(All, AuditLogStrategies,
                         ::testing::Values(Strategy::kAsynchronous,
                                           Strategy::kPerformance,
                                           Strategy::kSemisynchronous,
                                           Strategy::kSynchronous));

TEST(AuditLog, PerformanceDropsWhenFullAndCountsIt) {
  TempDir d;
  FaultFs fs;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = Strategy::kPerformance;
  o.buffer_size = 1024;
  o.fs = &fs;
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  fs.close_gate();  // the writer blocks in its first write
  for (int i = 0; i < 200; ++i) log.append(query("select 1"));
  EXPECT_GT(log.stats().events_lost, 0u);
  fs.open_gate();
  log.stop();
  EXPECT_EQ(log.stats().events_written + log.stats().events_lost, 200u);
}

TEST(AuditLog, AsynchronousWaitsWhenFull) {
  TempDir d;
  FaultFs fs;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = Strategy::kAsynchronous;
  o.buffer_size = 1024;
  o.fs = &fs;
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  fs.close_gate();  // a hung disk
  std::atomic<bool> returned{false};
  std::thread t([&] {
    for (int i = 0; i < 100; ++i) log.append(query("select 1"));
    returned = true;
  });
  // 100 records do not fit in 1 KiB: the session blocks, waiting for room
  // or in a write of its own (it drains a full buffer when the writer is
  // not writing), and drops nothing.
  while (fs.held_at_gate == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned);
  fs.open_gate();
  t.join();
  log.stop();
  EXPECT_EQ(log.stats().events_written, 100u);
  EXPECT_EQ(log.stats().events_lost, 0u);
}

TEST(AuditLog, FullDiskDropsReportsAndRecovers) {
  TempDir d;
  FaultFs fs;
  std::vector<std::string> errors, notes;
  std::mutex m;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = Strategy::kAsynchronous;
  o.fs = &fs;
  o.log = [&](bool is_error, const std::string &msg) {
    std::lock_guard<std::mutex> l(m);
    (is_error ? errors : notes).push_back(msg);
  };
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  log.append(query("before"));
  log.flush_buffer();
  fs.fail_write_errno = ENOSPC;
  fs.partial_bytes = 10;
  for (int i = 0; i < 1000; ++i) log.append(query("during"));  // never blocks
  log.flush_buffer();
  fs.fail_write_errno = 0;
  log.append(query("after"));
  log.stop();
  EXPECT_EQ(log.stats().events_lost, 1000u);
  EXPECT_GE(log.stats().write_errors, 1u);
  ASSERT_EQ(errors.size(), 1u);  // reported once per episode
  EXPECT_NE(errors[0].find("No space left"), std::string::npos);
  ASSERT_EQ(notes.size(), 1u);
  const auto ls = lines(read_file(d.file("audit.log")));
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_NE(ls[0].find("before"), std::string::npos);
  EXPECT_NE(ls[1].find("after"), std::string::npos);
}

TEST(AuditLog, IdsContinueAcrossRestartsAndTimeNeverGoesBack) {
  TempDir d;
  int64_t fake = 2000000000000000;
  Options o;
  o.path = d.file("audit.log");
  o.clock_us = [&] { return fake; };
  for (int run = 0; run < 2; ++run) {
    AuditLog log(o);
    std::string err;
    ASSERT_EQ(log.start(&err), 0);
    log.append(query("a"));
    fake -= 1000000;  // clock steps back
    log.append(query("b"));
    log.stop();
  }
  const auto ls = lines(read_file(d.file("audit.log")));
  ASSERT_EQ(ls.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(record_id(ls[i]), i + 1);
  auto ts = [](const std::string &l) {
    size_t p = l.find("\"timestamp\":\"");
    return l.substr(p, 45);
  };
  EXPECT_EQ(ts(ls[0]), ts(ls[1]));  // not earlier, though the clock went back
  EXPECT_EQ(parse_record_id(ls[3]), 4u);
}

// Runs the sink once over path: appends texts, stops; returns the ids it
// gave (read back from the file's new lines).
// The ids of the records (whole lines with an id) of a log file's text.
std::vector<uint64_t> record_ids(std::string text) {
  text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  std::vector<uint64_t> ids;
  for (const auto &l : lines(text))
    if (uint64_t id = parse_record_id(l)) ids.push_back(id);
  return ids;
}

// Runs the sink once over path: appends texts, stops; returns the ids it
// gave (read back from the file's new records).
std::vector<uint64_t> run_once(const Options &o, const std::vector<std::string> &texts) {
  const size_t before = record_ids(read_file(o.path)).size();
  {
    AuditLog log(o);
    std::string err;
    EXPECT_EQ(log.start(&err), 0) << err;
    for (const auto &t : texts) log.append(query(t));
    log.stop();
  }
  const std::vector<uint64_t> ids = record_ids(read_file(o.path));
  return std::vector<uint64_t>(ids.begin() + static_cast<long>(before), ids.end());
}

TEST(AuditLog, IdsContinueAfterARestartWhateverTheLastRecordsLength) {
  // One bulk INSERT is a record longer than any fixed tail the start might
  // read; its text may even hold something that looks like a record id.
  for (Format f : {Format::kJson, Format::kCsv, Format::kOld, Format::kNew}) {
    TempDir d;
    Options o;
    o.path = d.file("audit.log");
    o.format = f;
    const std::string bulk = "INSERT INTO t VALUES " + std::string(200000, 'v') +
                             " /* 999_2020-01-01T00:00:00 */" + std::string(1000, 'w');
    EXPECT_EQ(run_once(o, {"a", bulk}), (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(run_once(o, {"b"}), (std::vector<uint64_t>{3})) << format_name(f);
    EXPECT_EQ(run_once(o, {bulk + bulk}), (std::vector<uint64_t>{4}));
    EXPECT_EQ(run_once(o, {"c"}), (std::vector<uint64_t>{5})) << format_name(f);
  }
}

TEST(AuditLog, IdsContinueAfterACrashTornLastRecord) {
  // The torn record is removed before the ids are read: its id was never
  // in a whole record, and the next run gives it again.
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  EXPECT_EQ(run_once(o, {"a", "b"}), (std::vector<uint64_t>{1, 2}));
  {
    std::ofstream out(o.path, std::ios::binary | std::ios::app);
    out << "{\"audit_record\":{\"name\":\"Query\",\"record\":\"3_2026-01-01T00:00:00\",\"sqltext\":\"" +
               std::string(100000, 'x');
  }
  EXPECT_EQ(run_once(o, {"c"}), (std::vector<uint64_t>{3}));
}

TEST(AuditLog, IdsContinueFromTheNewestRotatedFile) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = Strategy::kSemisynchronous;
  o.rotate_on_size = 4096;
  o.rotations = 3;
  // Each record fills the file: every append rotates, the current file is
  // left empty and the last id is in audit.log.1, after a huge record.
  const std::string big(70000, 'r');
  EXPECT_EQ(run_once(o, {big, big}), (std::vector<uint64_t>{}));
  EXPECT_EQ(parse_record_id(lines(read_file(o.path + ".1")).back()), 2u);
  o.rotate_on_size = 0;
  // The current file is empty: the ids continue from audit.log.1.
  EXPECT_EQ(run_once(o, {"after"}), (std::vector<uint64_t>{3}));
  // A current file whose records are older than audit.log.1's (copied back
  // by hand, say) does not take the ids back either.
  std::filesystem::rename(o.path, o.path + ".1");  // record 3
  {
    std::ofstream out(o.path, std::ios::binary | std::ios::trunc);
    out << lines(read_file(o.path + ".2")).back() << "\n";  // record 1
  }
  EXPECT_EQ(run_once(o, {"again"}), (std::vector<uint64_t>{4}));
}

TEST(AuditLog, IdsAfterTheFilesAreGoneStartAgainFromOne) {
  // Nothing is left to read them from (documented in docs/audit_log.md):
  // the record field's log start time tells the runs apart.
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  EXPECT_EQ(run_once(o, {"a", "b"}), (std::vector<uint64_t>{1, 2}));
  std::filesystem::remove(o.path);
  EXPECT_EQ(run_once(o, {"c"}), (std::vector<uint64_t>{1}));
}

TEST(AuditLog, AWiderFileModeIsReportedAndTightened) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  { std::ofstream out(o.path); }
  ASSERT_EQ(chmod(o.path.c_str(), 0644), 0);
  std::vector<std::string> notes;
  o.log = [&](bool, const std::string &msg) { notes.push_back(msg); };
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0) << err;
  log.stop();
  struct stat st;
  ASSERT_EQ(stat(o.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("0644"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("0600"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find(o.path), std::string::npos) << notes[0];
}

TEST(AuditLog, AFileThatStaysReadableByOthersIsNotStarted) {
  TempDir d;
  FaultFs fs;
  fs.fail_chmod_errno = EPERM;
  Options o;
  o.path = d.file("audit.log");
  o.fs = &fs;
  { std::ofstream out(o.path); }
  ASSERT_EQ(chmod(o.path.c_str(), 0640), 0);
  AuditLog log(o);
  std::string err;
  EXPECT_EQ(log.start(&err), EPERM);
  EXPECT_NE(err.find("0640"), std::string::npos) << err;
  EXPECT_NE(err.find("Operation not permitted"), std::string::npos) << err;
}

TEST(AuditLog, OldFormatFilesAreOneXmlDocument) {
  // As Percona writes them: <?xml ...?><AUDIT> at the start of a file,
  // </AUDIT> at a clean close, removed again when the file is reopened
  // for more records; every rotated file is a whole document.
  const std::string header = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AUDIT>\n";
  const std::string footer = "</AUDIT>\n";
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.format = Format::kOld;
  auto records = [](const std::string &text) {
    std::vector<uint64_t> ids;
    for (const auto &l : lines(text))
      if (l.rfind("<AUDIT_RECORD ", 0) == 0) ids.push_back(parse_record_id(l));
    return ids;
  };
  for (int run = 0; run < 2; ++run) {
    AuditLog log(o);
    std::string err;
    ASSERT_EQ(log.start(&err), 0) << err;
    log.append(query("a"));
    log.append(query("b"));
    log.stop();
    const std::string text = read_file(o.path);
    EXPECT_EQ(text.rfind(header, 0), 0u) << text;
    EXPECT_EQ(text.substr(text.size() - footer.size()), footer) << text;
    EXPECT_EQ(lines(text).size(), 2 + 2 * (run + 1) + 1u) << text;
    EXPECT_EQ(records(text), run == 0 ? (std::vector<uint64_t>{1, 2})
                                      : (std::vector<uint64_t>{1, 2, 3, 4}));
  }
  o.strategy = Strategy::kSemisynchronous;
  o.rotate_on_size = 4096;
  o.rotations = 0;
  {
    AuditLog log(o);
    std::string err;
    ASSERT_EQ(log.start(&err), 0) << err;
    log.append(query(std::string(5000, 'x')));  // rotates after it
    log.append(query(std::string(5000, 'y')));  // and after it
    log.stop();
  }
  for (const char *name : {".2", ".1", ""}) {
    const std::string text = read_file(o.path + name);
    EXPECT_EQ(text.rfind(header, 0), 0u) << name;
    EXPECT_EQ(text.substr(text.size() - footer.size()), footer) << name;
  }
  EXPECT_EQ(records(read_file(o.path + ".1")), (std::vector<uint64_t>{6}));
  EXPECT_EQ(read_file(o.path), header + footer);
  // JSON and CSV files have no envelope.
  o.path = d.file("plain.log");
  o.format = Format::kCsv;
  o.rotate_on_size = 0;
  EXPECT_EQ(run_once(o, {"c"}), (std::vector<uint64_t>{1}));
  EXPECT_EQ(read_file(o.path).rfind("\"Query\",", 0), 0u);
}

TEST(AuditLog, RotationThroughTheSink) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = Strategy::kSemisynchronous;
  o.rotate_on_size = 1000;
  o.rotations = 2;
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  for (int i = 0; i < 100; ++i) log.append(query("select 'rotation'"));
  log.stop();
  EXPECT_TRUE(posix_fs()->exists(d.file("audit.log.1")));
  EXPECT_TRUE(posix_fs()->exists(d.file("audit.log.2")));
  EXPECT_FALSE(posix_fs()->exists(d.file("audit.log.3")));
  EXPECT_GT(log.stats().rotations_done, 2u);
}

TEST(AuditLog, BiggerThanTheBufferIsStillWritten) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.buffer_size = 512;
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  const std::string big(5000, 'q');
  log.append(query("small"));
  log.append(query(big));
  log.append(query("small again"));
  log.stop();
  const auto ls = lines(read_file(d.file("audit.log")));
  ASSERT_EQ(ls.size(), 3u);
  EXPECT_NE(ls[1].find(big), std::string::npos);
  EXPECT_EQ(record_id(ls[2]), 3);
}

TEST(AuditLog, SyslogHandlerSendsOneMessagePerRecord) {
  std::vector<std::string> sent;
  std::mutex m;
  Options o;
  o.handler = Handler::kSyslog;
  o.buffer_size = 700;  // records wrap around the buffer's end
  o.syslog_write = [&](std::string_view line) {
    std::lock_guard<std::mutex> l(m);
    sent.emplace_back(line);
  };
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0) << err;
  for (int i = 0; i < 50; ++i) log.append(query("select " + std::to_string(i)));
  log.stop();
  ASSERT_EQ(sent.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(looks_complete(sent[i])) << sent[i];
    EXPECT_EQ(record_id(sent[i]), i + 1);
    EXPECT_NE(sent[i].find("\"select " + std::to_string(i) + "\""), std::string::npos);
  }
}

TEST(AuditLog, RecordsWrappingTheBufferEndAtAnyOffsetAreWrittenWhole) {
  // Buffers sessions copy records into (not formatted yet) wrap a record,
  // or even its header, around their end at every offset over these sizes
  // and lengths; the writer must format each one whole, in id order.
  for (size_t buffer = 256; buffer < 256 + 48; ++buffer) {
    TempDir d;
    Options o;
    o.path = d.file("audit.log");
    o.buffer_size = buffer;
    o.format = buffer % 2 ? Format::kJson : Format::kCsv;
    {
      AuditLog log(o);
      std::string err;
      ASSERT_EQ(log.start(&err), 0) << err;
      for (int i = 0; i < 40; ++i)
        log.append(query(std::string(static_cast<size_t>(i * 7 % 23), 'a' + i % 26)));
    }
    const auto ls = lines(read_file(d.file("audit.log")));
    ASSERT_EQ(ls.size(), 40u) << buffer;
    for (int i = 0; i < 40; ++i) {
      EXPECT_EQ(parse_record_id(ls[i]), static_cast<uint64_t>(i + 1)) << buffer;
      const std::string text(static_cast<size_t>(i * 7 % 23), 'a' + i % 26);
      EXPECT_NE(ls[i].find("\"" + text + "\""), std::string::npos) << buffer << ": " << ls[i];
    }
  }
}

TEST(AuditLog, AsynchronousWritesWithoutAFlushWithinTheBatchWindow) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  for (int round = 0; round < 3; ++round) {
    log.append(query("one"));
    for (int i = 0; i < 200 && log.stats().events_written < static_cast<uint64_t>(round + 1); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(log.stats().events_written, static_cast<uint64_t>(round + 1));
  }
  log.stop();
}

// Under steady load the writer wakes on its own timer: a session that
// appends right after a drain finds it sleeping out a batch window, not
// idle, and makes no system call to wake it. Only the first record of a
// quiet log (the writer idle) costs its session a wake-up.
TEST(AuditLog, SteadyAppendsDoNotWakeTheWriter) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  // Appends 1 ms apart for 100 ms: about 20 batch windows of 5 ms.
  constexpr int kAppends = 100;
  // The writer may go idle only after a whole window with no append: on a
  // loaded machine the test thread may oversleep that long now and then.
  uint64_t long_gaps = 0;
  auto last = std::chrono::steady_clock::now();
  for (int i = 0; i < kAppends; ++i) {
    const auto now = std::chrono::steady_clock::now();
    if (i > 0 && now - last >= AuditLog::kBatchWindow) ++long_gaps;
    last = now;
    log.append(query("select 1"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int i = 0; i < 200 && log.stats().events_written < kAppends; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(log.stats().events_written, static_cast<uint64_t>(kAppends));
  // The first append wakes the idle writer.
  EXPECT_LE(log.stats().writer_wakeups, 1 + long_gaps);
  log.stop();
}

TEST(AuditLog, BigRecordsUnderLoadKeepFileOrder) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.buffer_size = 4096;
  {
    AuditLog log(o);
    std::string err;
    ASSERT_EQ(log.start(&err), 0);
    const std::string big(10000, 'B');
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&] {
        for (int i = 0; i < 300; ++i) log.append(query("small"));
      });
    ts.emplace_back([&] {
      for (int i = 0; i < 20; ++i) log.append(query(big));
    });
    for (auto &t : ts) t.join();
    log.flush_buffer();
    log.stop();
  }
  const auto ls = lines(read_file(d.file("audit.log")));
  ASSERT_EQ(ls.size(), 1220u);
  long long prev = 0;
  for (const auto &l : ls) {
    ASSERT_TRUE(looks_complete(l));
    ASSERT_EQ(record_id(l), prev + 1);
    prev = record_id(l);
  }
}

namespace {

// "timestamp":"..." of a JSON line (sortable text: fixed width, UTC).
std::string timestamp(const std::string &line) {
  const size_t p = line.find("\"timestamp\":\"");
  return p == std::string::npos ? "" : line.substr(p, 45);
}

}  // namespace

// Many sessions through the lock-free buffer, small (many laps, full most
// of the time) and default size: every record is in the file exactly once,
// whole, ids consecutive in file order, each session's records in its own
// order, timestamps never going back.
TEST(AuditLog, ManyProducersEveryRecordOnceInIdOrder) {
  for (size_t buffer : {size_t{4096}, size_t{1} << 20}) {
    TempDir d;
    Options o;
    o.path = d.file("audit.log");
    o.buffer_size = buffer;
    constexpr int kThreads = 16;
    constexpr int kPer = 2000;
    {
      AuditLog log(o);
      std::string err;
      ASSERT_EQ(log.start(&err), 0) << err;
      std::vector<std::thread> ts;
      for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&, t] {
          for (int i = 0; i < kPer; ++i)
            log.append(query("q " + std::to_string(t) + " " + std::to_string(i) +
                             " " + std::string(static_cast<size_t>(i % 50), 'x')));
        });
      for (auto &t : ts) t.join();
      log.stop();
      EXPECT_EQ(log.stats().events_written, uint64_t{kThreads} * kPer);
      EXPECT_EQ(log.stats().events_lost, 0u);
    }
    const auto ls = lines(read_file(d.file("audit.log")));
    ASSERT_EQ(ls.size(), size_t{kThreads} * kPer) << buffer;
    std::vector<int> next(kThreads, 0);
    std::string prev_ts;
    for (size_t n = 0; n < ls.size(); ++n) {
      const std::string &l = ls[n];
      ASSERT_TRUE(looks_complete(l)) << l;
      ASSERT_EQ(record_id(l), static_cast<long long>(n + 1));
      const size_t q = l.find("\"sqltext\":\"q ");
      ASSERT_NE(q, std::string::npos) << l;
      int t = -1, i = -1;
      ASSERT_EQ(std::sscanf(l.c_str() + q + 13, "%d %d", &t, &i), 2) << l;
      ASSERT_TRUE(t >= 0 && t < kThreads);
      ASSERT_EQ(i, next[t]) << "session " << t;  // once each, in order
      ++next[t];
      ASSERT_GE(timestamp(l), prev_ts);
      prev_ts = timestamp(l);
    }
  }
}

// PERFORMANCE with a stalled writer: sessions never wait, every record is
// either written or counted as lost, and the written ones have consecutive
// ids (a dropped record takes no id).
TEST(AuditLog, PerformanceCountsEveryDropUnderConcurrency) {
  TempDir d;
  FaultFs fs;
  Options o;
  o.path = d.file("audit.log");
  o.strategy = Strategy::kPerformance;
  o.buffer_size = 8192;
  o.fs = &fs;
  constexpr int kThreads = 8, kPer = 500;
  {
    AuditLog log(o);
    std::string err;
    ASSERT_EQ(log.start(&err), 0);
    fs.close_gate();
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&] {
        for (int i = 0; i < kPer; ++i) log.append(query("select 'perf'"));
      });
    for (auto &t : ts) t.join();  // returns with the writer still stalled
    EXPECT_GT(log.stats().events_lost, 0u);
    EXPECT_EQ(log.stats().write_waits, 0u);
    fs.open_gate();
    log.stop();
    EXPECT_EQ(log.stats().events_written + log.stats().events_lost,
              uint64_t{kThreads} * kPer);
    const auto ls = lines(read_file(d.file("audit.log")));
    EXPECT_EQ(ls.size(), log.stats().events_written);
    for (size_t n = 0; n < ls.size(); ++n)
      ASSERT_EQ(record_id(ls[n]), static_cast<long long>(n + 1));
  }
}

// Many more sessions than CPUs: the writer thread may get no CPU for a
// while. A session that finds the buffer full writes it out itself instead
// of waiting for the writer to be scheduled; order and completeness hold.
TEST(AuditLog, ASessionDrainsAFullBufferWhenTheWriterGetsNoCpu) {
  TempDir d;
  Options o;
  o.path = d.file("audit.log");
  o.buffer_size = 1024;
  std::mutex m;
  std::condition_variable cv;
  bool writer_may_run = false;
  o.before_writer_drain = [&] {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return writer_may_run; });
  };
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  constexpr int kThreads = 4, kEach = 100;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) log.append(query("select 1"));
    });
  for (auto &t : ts) t.join();  // returns although the writer never wrote
  EXPECT_GT(log.stats().session_drains, 0u);
  {
    std::lock_guard<std::mutex> l(m);
    writer_may_run = true;
  }
  cv.notify_all();
  log.stop();
  EXPECT_EQ(log.stats().events_written, static_cast<uint64_t>(kThreads * kEach));
  const auto ls = lines(read_file(d.file("audit.log")));
  ASSERT_EQ(ls.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t n = 0; n < ls.size(); ++n) {
    ASSERT_TRUE(looks_complete(ls[n])) << ls[n];
    ASSERT_EQ(record_id(ls[n]), static_cast<long long>(n + 1));
  }
}

// ASYNCHRONOUS with a stalled writer (e.g. a slow or hung disk): sessions
// go on without waiting while the buffer has room; only a record that does
// not fit waits, and it is written in its place once the writer moves.
TEST(AuditLog, AStalledWriterBlocksNobodyUntilTheBufferIsFull) {
  TempDir d;
  FaultFs fs;
  Options o;
  o.path = d.file("audit.log");
  o.buffer_size = 8192;
  o.fs = &fs;
  AuditLog log(o);
  std::string err;
  ASSERT_EQ(log.start(&err), 0);
  fs.close_gate();  // the writer's first write blocks: it is stuck
  log.append(query("first"));
  // Holding file_mu_, so no session can drain the buffer either.
  while (fs.held_at_gate == 0) std::this_thread::yield();
  // About half the buffer, from several sessions: no waits.
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 4; ++i) log.append(query("fits"));
    });
  for (auto &t : ts) t.join();
  EXPECT_EQ(log.stats().write_waits, 0u);
  // Longer than the free space, shorter than the buffer: waits.
  const std::string big(6000, 'w');
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    log.append(query(big));
    returned = true;
  });
  while (log.stats().write_waits == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(returned);
  fs.open_gate();
  waiter.join();
  log.append(query("last"));
  log.stop();
  const auto ls = lines(read_file(d.file("audit.log")));
  ASSERT_EQ(ls.size(), 19u);
  EXPECT_NE(ls[0].find("first"), std::string::npos);
  EXPECT_NE(ls[17].find(big), std::string::npos);
  EXPECT_NE(ls[18].find("last"), std::string::npos);
  for (size_t n = 0; n < ls.size(); ++n) {
    ASSERT_TRUE(looks_complete(ls[n]));
    ASSERT_EQ(record_id(ls[n]), static_cast<long long>(n + 1));
  }
}

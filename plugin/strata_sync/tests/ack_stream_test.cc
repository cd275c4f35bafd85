// Unit tests of the ack stream and the read turn (strata_sync_ack_stream.h):
// acks split across reads (and readers) come out whole, bad input ends the
// stream with a reason, and the turn is never held by both threads while
// neither of them loses input that arrived.
#include "strata_sync_ack_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using strata::sync::AckStream;
using strata::sync::Pos;
using strata::sync::ReadResult;
using strata::sync::ReadTurn;
namespace wire = strata::sync::wire;

namespace {

std::vector<unsigned char> ack_packet(const char *file, std::uint64_t pos) {
  unsigned char payload[wire::kAckMaxSize];
  const std::size_t len = wire::encode_ack(payload, file, pos);
  std::vector<unsigned char> pkt(wire::kPacketHeaderSize + len, 0);
  pkt[0] = static_cast<unsigned char>(len);  // acks are < 256 bytes here
  std::memcpy(pkt.data() + wire::kPacketHeaderSize, payload, len);
  return pkt;
}

/* A connection whose reads return the queued chunks, then would block. */
struct FakeConnection {
  std::vector<std::vector<unsigned char>> chunks;
  ReadResult at_end = ReadResult::kWouldBlock;
  std::size_t reads = 0;

  ReadResult operator()(unsigned char *buf, std::size_t cap, std::size_t *n) {
    if (reads >= chunks.size()) return at_end;
    auto &c = chunks[reads++];
    *n = std::min(cap, c.size());
    std::memcpy(buf, c.data(), *n);
    return ReadResult::kBytes;
  }
};

}  // namespace

TEST(StrataSyncAckStream, AcksSplitAcrossReadsComeOutWhole) {
  auto a = ack_packet("binlog.000001", 1000);
  auto b = ack_packet("binlog.000001", 2000);
  std::vector<unsigned char> all = a;
  all.insert(all.end(), b.begin(), b.end());
  AckStream stream;
  std::vector<Pos> got;
  const auto collect = [&](const Pos &p) { got.push_back(p); };
  // The first read ends inside the first ack's header; the second inside
  // the second ack: a different reader may make each call.
  FakeConnection first{{{all.begin(), all.begin() + 2}}};
  EXPECT_EQ(stream.read_available(first, collect), nullptr);
  EXPECT_TRUE(got.empty());
  FakeConnection second{{{all.begin() + 2, all.end() - 3}}};
  EXPECT_EQ(stream.read_available(second, collect), nullptr);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].pos, 1000u);
  FakeConnection third{{{all.end() - 3, all.end()}}};
  EXPECT_EQ(stream.read_available(third, collect), nullptr);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].file, "binlog.000001");
  EXPECT_EQ(got[1].pos, 2000u);
}

TEST(StrataSyncAckStream, OrderlyEndsAndGarbageAreTold) {
  const auto ignore = [](const Pos &) {};
  {
    AckStream stream;
    FakeConnection closed{{}, ReadResult::kClosed};
    const char *why = stream.read_available(closed, ignore);
    ASSERT_NE(why, nullptr);
    EXPECT_TRUE(AckStream::orderly_end(why));
    EXPECT_TRUE(AckStream::orderly_end(std::string("connection closed")));
    // The stream stays ended: no further read is attempted.
    FakeConnection more{{ack_packet("binlog.000001", 5)}};
    EXPECT_EQ(stream.read_available(more, ignore), why);
    EXPECT_EQ(more.reads, 0u);
  }
  {
    AckStream stream;
    FakeConnection quit{{{1, 0, 0, 0, wire::kComQuit}}};
    const char *why = stream.read_available(quit, ignore);
    ASSERT_NE(why, nullptr);
    EXPECT_TRUE(AckStream::orderly_end(why));
  }
  {
    AckStream stream;
    auto bad = ack_packet("binlog.000001", 5);
    bad[4] = 0x00;  // not the ack magic
    FakeConnection garbage{{bad}};
    const char *why = stream.read_available(garbage, ignore);
    ASSERT_NE(why, nullptr);
    EXPECT_FALSE(AckStream::orderly_end(why));
    EXPECT_STREQ(why, "bad ack magic");
  }
  {
    AckStream stream;
    FakeConnection oversized{{{0xff, 0xff, 0x00, 0}}};
    const char *why = stream.read_available(oversized, ignore);
    ASSERT_NE(why, nullptr);
    EXPECT_FALSE(AckStream::orderly_end(why));
  }
  {
    AckStream stream;
    FakeConnection failed{{}, ReadResult::kFailed};
    const char *why = stream.read_available(failed, ignore);
    ASSERT_NE(why, nullptr);
    EXPECT_FALSE(AckStream::orderly_end(why));
  }
}

TEST(StrataSyncAckStream, AFloodIsReadInBoundedRounds) {
  std::vector<std::vector<unsigned char>> chunks(AckStream::kMaxReads + 10,
                                                 ack_packet("binlog.000001", 7));
  FakeConnection flood{chunks};
  AckStream stream;
  int acks = 0;
  EXPECT_EQ(stream.read_available(flood, [&](const Pos &) { acks++; }),
            nullptr);
  EXPECT_EQ(acks, AckStream::kMaxReads);
  EXPECT_EQ(stream.read_available(flood, [&](const Pos &) { acks++; }),
            nullptr);
  EXPECT_EQ(acks, AckStream::kMaxReads + 10);
}

TEST(StrataSyncReadTurn, TheReaderReadsOnlyWhileTheDumpThreadWaits) {
  ReadTurn turn;
  turn.take();
  EXPECT_FALSE(turn.given());
  EXPECT_FALSE(turn.try_take());
  turn.take();  // twice in a row is harmless
  turn.give();
  EXPECT_TRUE(turn.given());
  ASSERT_TRUE(turn.try_take());
  turn.give_back();
  turn.give();  // twice in a row is harmless
  turn.take();
  EXPECT_FALSE(turn.try_take());
  turn.close();
  EXPECT_FALSE(turn.given());
  EXPECT_FALSE(turn.try_take());  // closed: never again
}

// The dump thread alternates between running (holding the turn) and
// waiting until the input is read; the reader, like the ack reader thread, watches for input only
// while it has not marked any as seen or while the turn is given, and marks
// it seen when it finds the turn taken; the dump thread reads marked input
// before it gives the turn away and wakes the reader if a mark appeared
// meanwhile. Every unit of input must be consumed by one of them, exactly
// once, and never by both at the same time.
TEST(StrataSyncReadTurn, InputIsNeverLeftUnreadNorReadTwice) {
  ReadTurn turn;
  constexpr int kInputs = 20000;
  std::atomic<int> produced{0}, consumed{0}, inside{0};
  std::atomic<bool> overlap{false}, reader_wake{false}, stop{false};
  const auto consume_all = [&] {
    if (inside.fetch_add(1) != 0) overlap = true;
    consumed.store(produced.load());
    inside.fetch_sub(1);
  };
  turn.take();
  std::thread dump([&] {
    for (int round = 0; !stop; round++) {
      if (turn.input_seen.load()) {
        consume_all();
        turn.input_seen.store(false);
        reader_wake = true;
      }
      if (round % 2 == 0) std::this_thread::yield();  // widen the races
      turn.give();
      if (turn.input_seen.load()) reader_wake = true;
      // Waiting for the binary log to grow: as under one session's commits,
      // the next event comes only after the ack it waits for was read.
      while (consumed.load() != produced.load() && !stop)
        std::this_thread::yield();
      if (round % 3 == 0) std::this_thread::yield();
      turn.take();
    }
    turn.close();
  });
  std::thread reader([&] {
    while (!stop) {
      // The ack reader's poll set: the socket's input only while no input
      // is marked seen or while the turn is given; always its wake-up pipe.
      const bool watching = !turn.input_seen.load() || turn.given();
      if (!watching) {  // asleep in poll() until the pipe wakes it
        while (!reader_wake.exchange(false) && !stop)
          std::this_thread::yield();
        continue;
      }
      if (consumed.load() == produced.load()) {  // no input (yet)
        std::this_thread::yield();
        continue;
      }
      if (turn.try_take()) {
        consume_all();
        turn.input_seen.store(false);
        turn.give_back();
      } else {
        turn.input_seen.store(true);
      }
    }
  });
  bool lost = false;
  for (int i = 0; i < kInputs && !lost; i++) {
    produced.fetch_add(1);
    // Somebody must get to it; a lost input would wait here for ever.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (consumed.load() < i + 1 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    lost = consumed.load() < i + 1;
  }
  stop = true;
  dump.join();
  reader.join();
  EXPECT_FALSE(lost);
  EXPECT_FALSE(overlap.load());
}

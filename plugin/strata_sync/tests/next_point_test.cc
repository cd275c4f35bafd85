// Unit tests of the dump thread's ack-point cursor (strata_sync_next_point.h):
// events before the next known point skip the lookup, and nothing that is
// an ack point is ever skipped.
#include "strata_sync_next_point.h"

#include <gtest/gtest.h>

#include <set>

using strata::sync::NextAckPoint;
using strata::sync::Pos;

namespace {
const char *kFile = "binlog.000001";
}

TEST(StrataSyncNextPoint, NothingKnownSkipsNothing) {
  NextAckPoint next;
  EXPECT_FALSE(next.before(Pos{kFile, 100}, 1));
}

TEST(StrataSyncNextPoint, EventsBeforeTheFoundPointSkip) {
  const std::set<Pos> points{{kFile, 500}, {kFile, 900}};
  NextAckPoint next;
  EXPECT_FALSE(next.lookup(points, Pos{kFile, 100}, 1));
  EXPECT_TRUE(next.before(Pos{kFile, 200}, 1));
  EXPECT_TRUE(next.before(Pos{kFile, 499}, 1));
  // The point itself and anything after it need a lookup.
  EXPECT_FALSE(next.before(Pos{kFile, 500}, 1));
  EXPECT_TRUE(next.lookup(points, Pos{kFile, 500}, 1));
  // After a point, the cursor moves to the one after it.
  EXPECT_TRUE(next.before(Pos{kFile, 700}, 1));
  EXPECT_FALSE(next.before(Pos{kFile, 900}, 1));
  EXPECT_TRUE(next.lookup(points, Pos{kFile, 900}, 1));
  // No later point registered yet: every event looks again.
  EXPECT_FALSE(next.before(Pos{kFile, 950}, 1));
}

// A point registered after the lookup lies after the events already
// published, so the events still before the remembered point are not it.
TEST(StrataSyncNextPoint, LaterRegistrationFoundOnTheNextLookup) {
  std::set<Pos> points{{kFile, 500}};
  NextAckPoint next;
  EXPECT_TRUE(next.lookup(points, Pos{kFile, 500}, 1));
  points.insert(Pos{kFile, 800});
  EXPECT_FALSE(next.before(Pos{kFile, 600}, 1));
  EXPECT_FALSE(next.lookup(points, Pos{kFile, 600}, 1));
  EXPECT_TRUE(next.before(Pos{kFile, 700}, 1));
  EXPECT_TRUE(next.lookup(points, Pos{kFile, 800}, 1));
}

// The next file's first group: the remembered point in the old file does
// not make events of the new file skip.
TEST(StrataSyncNextPoint, RotateLooksUpAgain) {
  const std::set<Pos> points{{kFile, 500}, {"binlog.000002", 300}};
  NextAckPoint next;
  EXPECT_TRUE(next.lookup(points, Pos{kFile, 500}, 1));
  EXPECT_TRUE(next.before(Pos{"binlog.000002", 200}, 1));
  EXPECT_FALSE(next.before(Pos{"binlog.000002", 300}, 1));
  EXPECT_TRUE(next.lookup(points, Pos{"binlog.000002", 300}, 1));
}

// RESET BINARY LOGS: positions start over in a file the old cursor ranks
// after, so a new generation must drop it.
TEST(StrataSyncNextPoint, NewGenerationDropsTheCursor) {
  const std::set<Pos> old_points{{"binlog.000007", 500}};
  NextAckPoint next;
  EXPECT_FALSE(next.lookup(old_points, Pos{"binlog.000007", 100}, 1));
  EXPECT_TRUE(next.before(Pos{kFile, 400}, 1));
  EXPECT_FALSE(next.before(Pos{kFile, 400}, 2));
  const std::set<Pos> new_points{{kFile, 400}};
  EXPECT_TRUE(next.lookup(new_points, Pos{kFile, 400}, 2));
}

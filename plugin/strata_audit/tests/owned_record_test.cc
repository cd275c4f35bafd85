#include "owned_record.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace strata_audit {
namespace {

// The record a statement's event produced, its strings in a buffer that
// goes away with the event, as the server's do.
TEST(OwnedRecord, OutlivesTheEventsStrings) {
  std::unique_ptr<OwnedRecord> owned;
  {
    std::string user = "alice", db = "payroll", query(300, 'q'), cls = "commit";
    Record r;
    r.kind = EventKind::kQuery;
    r.connection_id = 42;
    r.status = 0;
    r.user = user;
    r.db = db;
    r.query = query;
    r.command_class = cls;
    r.query_truncated = true;
    r.rows_sent = 7;
    owned = std::make_unique<OwnedRecord>(r);
    user.assign("XXXXX");
    query.assign(300, 'X');
  }
  const Record &r = owned->record();
  EXPECT_EQ(r.kind, EventKind::kQuery);
  EXPECT_EQ(r.connection_id, 42u);
  EXPECT_EQ(r.user, "alice");  // a short string: held inside the object
  EXPECT_EQ(r.db, "payroll");
  EXPECT_EQ(r.query, std::string(300, 'q'));
  EXPECT_EQ(r.command_class, "commit");
  EXPECT_TRUE(r.query_truncated);
  EXPECT_EQ(r.rows_sent, 7u);
  EXPECT_TRUE(r.host.empty());
}

TEST(OwnedRecord, StatusCanBeSetLater) {
  Record r;
  r.query = "COMMIT";
  OwnedRecord owned(r);
  owned.record().status = 1180;
  EXPECT_EQ(owned.record().status, 1180);
  EXPECT_EQ(owned.record().query, "COMMIT");
}

}  // namespace
}  // namespace strata_audit

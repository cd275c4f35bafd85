// OwnedRecord: a Record that owns the strings it points to.
//
// A Record's string_views point into the server's event structures, valid
// only during the event (record.h). A record that must be written later
// (a statement whose status strong sync deferred: strata_audit.cc keeps it
// until the status is sent) is copied into an OwnedRecord first. Not
// copyable or movable: a moved std::string may move its characters (short
// strings live inside the object), which would leave the views dangling;
// keep it behind a unique_ptr.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "record.h"

namespace strata_audit {

class OwnedRecord {
 public:
  explicit OwnedRecord(const Record &r) : r_(r) {
    size_t i = 0;
    for (std::string_view Record::*field : kTextFields) {
      storage_[i] = std::string(r_.*field);
      r_.*field = storage_[i];
      ++i;
    }
  }
  OwnedRecord(const OwnedRecord &) = delete;
  OwnedRecord &operator=(const OwnedRecord &) = delete;

  // Its non-text fields (status, times, counters) may be changed; the
  // text fields must keep pointing into this object.
  Record &record() { return r_; }
  const Record &record() const { return r_; }

 private:
  static constexpr std::array<std::string_view Record::*, 15> kTextFields = {
      &Record::user,          &Record::priv_user, &Record::host,
      &Record::ip,            &Record::os_user,   &Record::proxy_user,
      &Record::db,            &Record::command,   &Record::command_class,
      &Record::query,         &Record::table_op,  &Record::table_db,
      &Record::table,         &Record::variable,  &Record::value};

  Record r_;
  std::array<std::string, kTextFields.size()> storage_;
};

}  // namespace strata_audit

// strata: how a feature of ours answers SHOW STATUS (one SHOW_FUNC entry per
// feature in handler/ha_innodb.cc's status list, patch 0003): its array of
// values while the feature is on, and an empty list while it is off, so that
// a server without the feature shows nothing of it and upstream's results
// do not change.
#pragma once
#include "mysql/status_var.h"

/* One global 64-bit counter in a feature's array, and the array's end. */
#define STRATA_STATUS_LL(name, var) \
  { name, (char *)&var, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL }
#define STRATA_STATUS_END \
  { nullptr, nullptr, SHOW_LONG, SHOW_SCOPE_GLOBAL }

namespace strata {

/** Answers a feature's SHOW_FUNC: `values` (null while the feature is off:
an empty list). */
inline int show_status_array(SHOW_VAR *var, SHOW_VAR *values) {
  static SHOW_VAR none[] = {STRATA_STATUS_END};
  var->type = SHOW_ARRAY;
  var->scope = SHOW_SCOPE_GLOBAL;
  var->value = reinterpret_cast<char *>(values != nullptr ? values : none);
  return 0;
}

}  // namespace strata

// SearchRuns in SQLite. The language's meaning stays in core (RunMatches, SortAndPage decide
// every search, as in every store); SQL only finds and loads the runs worth deciding on, with
// just the values the filter and order refer to:
//  - a search ordered first by a metric walks that metric's index in order and stops once the
//    page is settled;
//  - otherwise the key indexes narrow the runs where the filter allows (param and tag equality,
//    metric comparisons), and the runs of the query's experiments that remain are loaded.
// The runs of the page are then loaded whole.
#pragma once

#include <vector>

#include "core/model.h"
#include "store/metadata_store.h"
#include "store/sqlite/sqlite_db.h"

namespace cairn::store::sqlite {

// SearchRuns on a read connection.
Result<std::vector<core::Run>> SearchRunsIn(Connection& c, const RunSearchQuery& query);

}  // namespace cairn::store::sqlite

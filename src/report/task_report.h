// What the command line prints about tasks, queues and agents: `cairn task ls` and `show`,
// `cairn queue ls`.
#pragma once

#include <span>
#include <string>

#include "client/task_client.h"
#include "core/task.h"
#include "report/run_report.h"

namespace cairn::report {

// Columns id (short), queue, state, priority, attempt, GPUs, owner, and what it is doing:
// "waiting 3m05s (over quota)", "on gpu-host-1 for 2m10s", "done 12-05 14:03 (exit code 0)".
std::string FormatTaskTable(std::span<const core::Task> tasks, const OutputStyle& style,
                            int64_t now_millis);
// One JSON object per line, as the API gives them.
std::string TasksJsonLines(std::span<const core::Task> tasks);
// Every field of one task, with its spec and requirements.
std::string FormatTaskDetails(const core::Task& task, int64_t now_millis);
// Columns name, waiting, running, default priority, description.
std::string FormatQueueTable(std::span<const client::QueueSummary> queues,
                             const OutputStyle& style);

}  // namespace cairn::report

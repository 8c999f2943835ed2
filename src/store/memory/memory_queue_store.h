// The QueueStore of the memory store: queues, tasks and agents in maps under one mutex.
#pragma once

#include <memory>

#include "store/queue_store.h"

namespace cairn::store {

std::unique_ptr<QueueStore> NewMemoryQueueStore();

}  // namespace cairn::store

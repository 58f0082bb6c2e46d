// Queues of work held by threads (accrete/persona.hpp; defined in
// src/backend/mpi/progress.cpp). Each thread holds its own default queue
// and a stack of queues it pushed; the thread that initialised the runtime
// holds the master queue until it lets go. User-level progress runs the
// work of every queue the calling thread holds.
#include "accrete/detail/internal.hpp"

#ifndef ACCRETE_DETAIL_LPC_QUEUE_HPP
#define ACCRETE_DETAIL_LPC_QUEUE_HPP

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace accrete::detail {

/// A queue of work for the thread that holds it (UPC++: a persona).
struct lpc_queue {
  std::mutex m;
  std::vector<std::function<void()>> items;
  std::atomic<std::size_t> count{0};         // items.size(), read without the lock
  std::atomic<const void*> holder{nullptr};  // the holding thread's marker, or null
};

/// The queue on top of the calling thread's stack (its default queue if it
/// pushed none).
const std::shared_ptr<lpc_queue>& current_queue();
/// The calling thread's default queue, and the master queue.
const std::shared_ptr<lpc_queue>& default_queue();
const std::shared_ptr<lpc_queue>& master_queue();
/// Pushes `q` onto the calling thread's stack; throws accrete::error if
/// another thread holds it. pop_queue takes it off again (it must be on
/// top; throws otherwise).
void push_queue(const std::shared_ptr<lpc_queue>& q);
void pop_queue(const std::shared_ptr<lpc_queue>& q);
/// Whether the calling thread holds `q`.
bool holds_queue(const lpc_queue& q) noexcept;
/// Appends `f` to `q` (any thread); it runs in the holder's next
/// user-level progress.
void post(lpc_queue& q, std::function<void()> f);

}  // namespace accrete::detail

#endif

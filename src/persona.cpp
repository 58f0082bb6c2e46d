// Personas (accrete/persona.hpp) over the backend's queues held by threads.
#include "accrete/persona.hpp"

#include <vector>

#include "accrete/detail/backend.hpp"

namespace accrete {

namespace {
// The scopes this thread pushed (persona_scope), innermost last.
thread_local std::vector<persona_scope*> scopes;
}  // namespace

persona& master_persona() {
  static persona p(detail::master_queue());
  // A new runtime (finalize, then init again) has a new master queue.
  if (p.q_ != detail::master_queue()) p.q_ = detail::master_queue();
  return p;
}

persona& default_persona() {
  thread_local persona p(detail::default_queue());
  return p;
}

persona& current_persona() {
  const auto& top = detail::current_queue();
  if (!scopes.empty() && scopes.back()->p_->queue() == top) return *scopes.back()->p_;
  if (top == detail::master_queue()) return master_persona();
  return default_persona();
}

persona_scope::persona_scope(persona& p) { enter(p); }

void persona_scope::enter(persona& p) {
  detail::push_queue(p.queue());
  scopes.push_back(this);
  p_ = &p;
}

persona_scope::~persona_scope() {
  if (!p_) return;  // the implicit scope: nothing was pushed
  try {
    detail::pop_queue(p_->queue());
  } catch (...) {
    // A scope ended out of order: the stack is left as it is (the error is
    // the program's; a destructor cannot report it).
  }
  if (!scopes.empty() && scopes.back() == this) scopes.pop_back();
  if (unlock_) unlock_();
}

persona_scope& default_persona_scope() {
  thread_local persona_scope implicit{persona_scope::implicit_t{}};
  return implicit;
}

persona_scope& top_persona_scope() { return scopes.empty() ? default_persona_scope() : *scopes.back(); }

void liberate_master_persona() {
  const auto& m = detail::master_queue();
  if (!detail::holds_queue(*m) || detail::current_queue() != m)
    throw error("accrete::liberate_master_persona: the calling thread does not have the master persona on top of "
                "its stack (call it from the thread that called init(), outside any persona_scope)");
  detail::pop_queue(m);
}

}  // namespace accrete

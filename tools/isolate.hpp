// isolate.hpp - runs a piece of work in a forked child so that a crash or a
// hang there becomes a reported failure instead of ending the whole run.
#ifndef SINGA_TOOLS_ISOLATE_HPP
#define SINGA_TOOLS_ISOLATE_HPP

#include <functional>
#include <string>

namespace singa {
namespace cli {

struct ChildOutcome {
  bool completed = false;  // the child returned a result
  std::string result;      // what `work` returned, when completed
  std::string failure;     // otherwise: signal, timeout or exit status
};

// Forks; the child runs `work` (which must not throw), sends its result back
// through a pipe and exits without running static destructors. The parent
// kills the child after `timeout_s` seconds (0 = no limit).
ChildOutcome run_isolated(const std::function<std::string()>& work, int timeout_s);

}  // namespace cli
}  // namespace singa
#endif

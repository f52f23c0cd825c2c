// backends.hpp - the communicators behind world() (internal to the core).
#ifndef SINGA_CORE_DIST_BACKENDS_HPP
#define SINGA_CORE_DIST_BACKENDS_HPP

#include <singa/dist.hpp>

#include <memory>

namespace singa {
namespace dist {

// One rank: collectives copy or do nothing.
std::shared_ptr<Communicator> make_single();
// MPI_COMM_WORLD (initialising MPI); only in builds with MPI (SINGA_HAVE_MPI).
std::shared_ptr<Communicator> make_mpi(const LaunchInfo& launch);

}  // namespace dist
}  // namespace singa
#endif

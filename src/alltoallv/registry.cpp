// The alltoallv registry: the one list of alltoallv algorithms.
#include "alltoallv/alltoallv.h"

namespace tucoll::alltoallv {

const Registry<Algorithm> &registry() {
    static const Registry<Algorithm> instance("alltoallv", "TUCOLL_ALLTOALLV", "auto",
                                              {
                                                  vendor_algorithm(),
                                                  linear_algorithm(),
                                                  pairwise_algorithm(),
                                                  spreadout_algorithm(),
                                                  scattered_algorithm(),
                                                  xor_algorithm(),
                                                  bruck2_algorithm(),
                                                  tuna_algorithm(),
                                                  tuna_coalesced_algorithm(),
                                                  tuna_staggered_algorithm(),
                                                  ipc_algorithm(),
                                                  staged_algorithm(),
                                                  auto_algorithm(),
                                              });
    return instance;
}

}  // namespace tucoll::alltoallv

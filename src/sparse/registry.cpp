// The alltoall_crs and alltoallv_crs registries.
#include "sparse/sparse.h"

namespace tucoll::sparse {

const Registry<Algorithm> &alltoall_crs_registry() {
    static const Registry<Algorithm> instance("alltoall_crs", "TUCOLL_ALLTOALL_CRS", "personalized",
                                              {personalized_algorithm(), nbx_algorithm(), rma_algorithm(),
                                               personalized_loc_algorithm(), nbx_loc_algorithm()});
    return instance;
}

const Registry<Algorithm> &alltoallv_crs_registry() {
    static const Registry<Algorithm> instance("alltoallv_crs", "TUCOLL_ALLTOALLV_CRS", "personalized",
                                              {personalized_algorithm(), nbx_algorithm(),
                                               personalized_loc_algorithm(), nbx_loc_algorithm()});
    return instance;
}

}  // namespace tucoll::sparse

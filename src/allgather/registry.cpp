// The allgather and allgatherv registries.
#include "allgather/allgather.h"

namespace tucoll::allgather {

const Registry<Algorithm> &allgather_registry() {
    static const Registry<Algorithm> instance("allgather", "TUCOLL_ALLGATHER", "vendor",
                                              {
                                                  vendor_allgather(),
                                                  ring_algorithm(),
                                                  neighbor_algorithm(),
                                                  recdoubling_algorithm(),
                                                  bruck_algorithm(),
                                                  sparbit_algorithm(),
                                              });
    return instance;
}

const Registry<Algorithm> &allgatherv_registry() {
    static const Registry<Algorithm> instance("allgatherv", "TUCOLL_ALLGATHERV", "vendor",
                                              {
                                                  vendor_allgatherv(),
                                                  ring_algorithm(),
                                                  sparbit_algorithm(),
                                              });
    return instance;
}

}  // namespace tucoll::allgather

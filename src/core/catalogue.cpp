// The list of every collective's registry, for introspection.
#include "allgather/allgather.h"
#include "alltoallv/alltoallv.h"
#include "core/registry.h"
#include "sparse/sparse.h"

namespace tucoll {

const std::vector<const RegistryBase *> &all_registries() {
    static const std::vector<const RegistryBase *> registries = {
        &alltoallv::registry(),
        &alltoallv::alltoall_registry(),
        &allgather::allgather_registry(),
        &allgather::allgatherv_registry(),
        &sparse::alltoall_crs_registry(),
        &sparse::alltoallv_crs_registry(),
    };
    return registries;
}

}  // namespace tucoll

// The list of every collective's registry, for introspection.
#include "allgather/allgather.h"
#include "alltoallv/alltoallv.h"
#include "core/registry.h"

namespace tucoll {

const std::vector<const RegistryBase *> &all_registries() {
    static const std::vector<const RegistryBase *> registries = {
        &alltoallv::registry(),
        &allgather::allgather_registry(),
        &allgather::allgatherv_registry(),
    };
    return registries;
}

}  // namespace tucoll

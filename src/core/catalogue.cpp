// The list of every collective's registry, for introspection.
#include "alltoallv/alltoallv.h"
#include "core/registry.h"

namespace tucoll {

const std::vector<const RegistryBase *> &all_registries() {
    static const std::vector<const RegistryBase *> registries = {
        &alltoallv::registry(),
    };
    return registries;
}

}  // namespace tucoll

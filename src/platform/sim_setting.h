// SMPI builds only (defined in src/platform/smpi.cpp): the numbers `tucoll sim` passes a simulated
// run from its platform, as environment variables (TUCOLL_SIM_*).
#pragma once

namespace tucoll::platform {

// The positive number in the environment variable `name`, else `fallback` (unset, not a
// number, or not above 0).
double sim_setting(const char *name, double fallback);

}  // namespace tucoll::platform

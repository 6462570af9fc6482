// Prints the links of the route between pairs of hosts of a SimGrid platform, one line per pair:
//   routes PLATFORM.xml HOST_A HOST_B [HOST_C HOST_D ...]
//   HOST_A HOST_B link link ...
// tests/python/test_sim.py uses it to check the routing of the simulated topologies (and that
// sim/simgrid-patches/ were applied to the SimGrid that the project built).
#include <simgrid/s4u.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv)
{
  simgrid::s4u::Engine engine(&argc, argv);
  if (argc < 4 || argc % 2 != 0) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml HOST_A HOST_B [HOST_C HOST_D ...]\n", argv[0]);
    return 2;
  }
  engine.load_platform(argv[1]);
  for (int i = 2; i + 1 < argc; i += 2) {
    std::vector<simgrid::s4u::Link*> links;
    double latency = 0;
    engine.host_by_name(argv[i])->route_to(engine.host_by_name(argv[i + 1]), links, &latency);
    std::printf("%s %s", argv[i], argv[i + 1]);
    for (const auto* link : links)
      std::printf(" %s", link->get_cname());
    std::printf("\n");
  }
  return 0;
}

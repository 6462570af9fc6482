// The host IPC backend where the kernel refuses cross-memory attach. Rank 1 installs a seccomp
// filter that fails process_vm_readv/process_vm_writev with EPERM — what Docker's default profile
// does to processes without CAP_SYS_PTRACE, and what a strict Yama ptrace_scope does to writes
// between sibling processes. Every rank must then agree, on the first call of a communicator, to
// exchange by messages, and the results must be right. A filter cannot be removed, so this runs in
// a process of its own.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <string>

#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

bool refuse_cross_memory_attach() {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// The uniform exchange of test_util through ipc with every block copied; *path: how it ran.
bool exchange(MPI_Comm comm, int n, std::string *path) {
    const bool ok = uniform_int_alltoallv("ipc:ipc_threshold=0", n, comm);
    tucoll_stats_t stats;
    if (tucoll_get_stats(comm, &stats) == MPI_SUCCESS) *path = stats.path;
    return ok;
}

TEST(IpcRefused, OneRankRefusedEveryRankFallsBack) {
    if (world_size() < 2) GTEST_SKIP();
    MPI_Comm before;
    MPI_Comm_dup(MPI_COMM_WORLD, &before);
    std::string path;
    ASSERT_TRUE(exchange(before, 500, &path));
    EXPECT_EQ(path.find("refused"), std::string::npos) << "the backend works here before the filter: " << path;

    bool installed = world_rank() != 1 || refuse_cross_memory_attach();
    ASSERT_TRUE(all_ranks(installed)) << "seccomp filter";
    MPI_Comm after;
    MPI_Comm_dup(MPI_COMM_WORLD, &after);
    for (int call = 0; call < 3; ++call) {
        EXPECT_TRUE(exchange(after, 500, &path)) << "call " << call;
        EXPECT_TRUE(all_ranks(path.find("refused") != std::string::npos)) << path;
    }
    MPI_Comm_free(&after);
    MPI_Comm_free(&before);
}

}  // namespace
}  // namespace tucoll::test

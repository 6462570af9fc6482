// GoogleTest main for MPI test programs: every rank runs every test; rank 0 prints the usual
// report, the others print only their failures; the exit code is the worst over ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
  public:
    explicit FailurePrinter(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult &result) override {
        if (!result.failed()) return;
        std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                     result.line_number(), result.summary());
    }

  private:
    int rank_;
};

}  // namespace

// The thread level a test program asks for; a program that needs another defines this function.
__attribute__((weak)) int tucoll_test_thread_level() { return MPI_THREAD_SINGLE; }

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, tucoll_test_thread_level(), &provided);
    ::testing::InitGoogleTest(&argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) {
        auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new FailurePrinter(rank));
    }
    int rc = RUN_ALL_TESTS();
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}

/*
 * tucoll — tunable MPI collectives for irregular data exchange.
 *
 * The only public header. Every collective has the same arguments and semantics as its MPI
 * counterpart; the `_with` form takes an algorithm spec string first:
 *
 *     "name"                      e.g. "pairwise"
 *     "name:key=value,key=value"  e.g. "scattered:block_count=8"
 *
 * Passing NULL (or "") as the spec selects as the plain form does: the collective's environment
 * variable (TUCOLL_ALLTOALLV, TUCOLL_ALLGATHER, TUCOLL_ALLGATHERV, TUCOLL_ALLTOALL_CRS,
 * TUCOLL_ALLTOALLV_CRS) when set, otherwise the
 * built-in default.
 *
 * Errors are returned as MPI error classes (MPI_ERR_COUNT, MPI_ERR_ARG, ...). tucoll does not
 * invoke the communicator's error handler; tucoll_error_string() gives the detailed message.
 */
#ifndef TUCOLL_H
#define TUCOLL_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols of the C API are the only ones libtucoll exports. */
#if defined(__GNUC__)
#define TUCOLL_API __attribute__((visibility("default")))
#else
#define TUCOLL_API
#endif

#define TUCOLL_VERSION_MAJOR 0
#define TUCOLL_VERSION_MINOR 1
#define TUCOLL_VERSION_PATCH 0

/* ---- Non-uniform all-to-all -------------------------------------------------------------- */

/* Same arguments and semantics as MPI_Alltoallv (MPI_IN_PLACE accepted as sendbuf). */
TUCOLL_API int tucoll_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);

/* As tucoll_alltoallv with an explicit algorithm spec; every rank must pass the same spec. */
TUCOLL_API int tucoll_alltoallv_with(const char *spec, const void *sendbuf, const int sendcounts[],
                          const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                          MPI_Comm comm);

/* Requests: nonblocking calls (tucoll_ialltoallv, tucoll_ialltoall, ...) and persistent plans
   (tucoll_alltoallv_init, tucoll_alltoall_init, tucoll_allgather(v)_init), completed as MPI
   requests are. A nonblocking call returns once its schedule has posted its first round; the
   exchange advances whenever tucoll runs on this rank (tucoll_test, tucoll_wait, any other tucoll
   call, or while any tucoll operation waits), and with TUCOLL_PROGRESS=thread (under
   MPI_THREAD_MULTIPLE) in a progress thread meanwhile. tucoll_wait and a tucoll_test that finds
   it complete free a nonblocking call's request (*request = TUCOLL_REQUEST_NULL) and leave a persistent one
   inactive, ready to start again. As in MPI, collectives on a communicator are started in the
   same order on every rank, and may be completed in any order; a blocking tucoll collective on
   a communicator first completes the operations outstanding there. A null or inactive request
   completes at once. As in MPI, the caller may free a call's datatypes once it has started, and
   its communicator before the wait (MPI_Comm_free completes what was started on it). */
typedef struct tucoll_plan *tucoll_request_t;
#define TUCOLL_REQUEST_NULL ((tucoll_request_t)0)
TUCOLL_API int tucoll_start(tucoll_request_t *request);
TUCOLL_API int tucoll_test(tucoll_request_t *request, int *flag);
TUCOLL_API int tucoll_wait(tucoll_request_t *request);
/* Advances every outstanding nonblocking and persistent operation of this process once, without
   blocking and without completing any request (each is still completed by its wait or test, which
   reports its errors); *pending, where not NULL, is how many remain outstanding. For a program
   that waits in the MPI library for requests of its own while tucoll operations are outstanding:
   MPI's progress rule lets another rank's completion depend on them, and they advance only when
   tucoll runs, so such a wait polls (MPI_Test, then tucoll_progress) while *pending > 0. The
   interposer's waits do this. The same thread rules as tucoll_test; called from a nonblocking
   operation's own MPI calls (under an interposer), it does nothing and sets *pending to 0. */
TUCOLL_API int tucoll_progress(int *pending);
/* Frees an inactive persistent request (an active one is refused: wait for it first) and sets
   *request = TUCOLL_REQUEST_NULL. As MPI's, a plan keeps its communicator: it may be started
   after MPI_Comm_free, and the last plan's free releases what tucoll kept of the communicator. */
TUCOLL_API int tucoll_request_free(tucoll_request_t *request);

/* MPI_Ialltoallv: the arguments of tucoll_alltoallv, which must stay untouched until the
   request completes. */
TUCOLL_API int tucoll_ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 tucoll_request_t *request);
TUCOLL_API int tucoll_ialltoallv_with(const char *spec, const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                      MPI_Comm comm, tucoll_request_t *request);

/* Persistent alltoallv (MPI-4 persistent-collective semantics, as MPI_Alltoallv_init): collective;
   the algorithm (auto's decision included), M for TuNA and the copies of the count and
   displacement arrays are made once, so that each start then communicates only the exchange
   itself. The buffers' contents may change between starts; the buffers, counts, displacements
   and datatypes are those given here. `info` is accepted for MPI's signature and ignored. A
   rejected argument on any rank fails the call on every rank (*request = TUCOLL_REQUEST_NULL).
   tucoll_start is local: it posts the schedule's first round. Derived datatypes are
   duplicated, so the caller may free theirs after the init. tucoll_get_stats reports each
   completed exchange ("persistent" in its path). */
TUCOLL_API int tucoll_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     tucoll_request_t *request);
TUCOLL_API int tucoll_alltoallv_init_with(const char *spec, const void *sendbuf, const int sendcounts[],
                                          const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                          const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                          MPI_Comm comm, MPI_Info info, tucoll_request_t *request);

/* ---- All-to-all ------------------------------------------------------------------------------ */

/* Same arguments and semantics as MPI_Alltoall (MPI_IN_PLACE accepted as sendbuf). Every
   alltoallv algorithm serves it; TUCOLL_ALLTOALL chooses among them as TUCOLL_ALLTOALLV does. */
TUCOLL_API int tucoll_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* As tucoll_alltoall with an explicit algorithm spec; every rank must pass the same spec. */
TUCOLL_API int tucoll_alltoall_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* MPI_Ialltoall (requests: see tucoll_ialltoallv). */
TUCOLL_API int tucoll_ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request);
TUCOLL_API int tucoll_ialltoall_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                     tucoll_request_t *request);

/* MPI_Alltoall_init: a persistent alltoall, as tucoll_alltoallv_init (collective; local starts;
   the algorithm, auto's decision and TuNA's M made once; derived datatypes duplicated). */
TUCOLL_API int tucoll_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    tucoll_request_t *request);
TUCOLL_API int tucoll_alltoall_init_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                         MPI_Info info, tucoll_request_t *request);

/* ---- Allgather -------------------------------------------------------------------------------- */

/* Same arguments and semantics as MPI_Allgather (MPI_IN_PLACE accepted as sendbuf). */
TUCOLL_API int tucoll_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
TUCOLL_API int tucoll_allgather_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* Same arguments and semantics as MPI_Allgatherv (MPI_IN_PLACE accepted, zero counts allowed). */
TUCOLL_API int tucoll_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm);
TUCOLL_API int tucoll_allgatherv_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, const int recvcounts[], const int displs[],
                                      MPI_Datatype recvtype, MPI_Comm comm);

/* MPI_Iallgather and MPI_Iallgatherv (requests: see tucoll_ialltoallv). */
TUCOLL_API int tucoll_iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request);
TUCOLL_API int tucoll_iallgather_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                      tucoll_request_t *request);
TUCOLL_API int tucoll_iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                  tucoll_request_t *request);
TUCOLL_API int tucoll_iallgatherv_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request);

/* MPI_Allgather_init and MPI_Allgatherv_init: persistent allgathers (collective: a rejected
   argument on any rank fails the call on every rank; the algorithm selected once; each
   tucoll_start local, posting the schedule's first round). As MPI says, the buffers and the
   recvcounts and displs arrays stay the plan's until it is freed; derived datatypes are
   duplicated, so the caller may free theirs after the init. `info` is accepted and ignored. */
TUCOLL_API int tucoll_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     tucoll_request_t *request);
TUCOLL_API int tucoll_allgather_init_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                          MPI_Info info, tucoll_request_t *request);
TUCOLL_API int tucoll_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                      MPI_Info info, tucoll_request_t *request);
TUCOLL_API int tucoll_allgatherv_init_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                           void *recvbuf, const int recvcounts[], const int displs[],
                                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                           tucoll_request_t *request);

/* ---- Sparse dynamic data exchange --------------------------------------------------------------- */

/* Constant-size messages (seed 004's MPIX_Alltoall_crs). Each rank sends `sendcount` elements of
 * `sendtype` to each of its `send_nnz` destinations dest[i] (message i starts at element
 * i * sendcount of sendvals); no rank knows who sends to it. On input *recv_nnz is the number of
 * messages this rank will receive if the caller knows it, else -1: a collective choice, every rank
 * giving its count or every rank -1 (TUCOLL_CHECK=global checks that, and that a count given is
 * the one that arrives). On return *recv_nnz holds that
 * number, *src the sources in ascending rank order (messages from one source in the order it
 * listed them) and *recvvals their `recvcount` elements of `recvtype` each, in the same order.
 * *src and *recvvals are allocated by tucoll (NULL when nothing arrived): release them with
 * tucoll_free. A message to the sending rank itself is delivered like any other. A rank with no
 * messages (send_nnz = 0) may pass any sendcount. Host memory only: sendvals on a GPU is refused
 * (MPI_ERR_BUFFER), and so is a recvtype of negative lower bound or extent (MPI_ERR_TYPE). */
TUCOLL_API int tucoll_alltoall_crs(int send_nnz, const int dest[], int sendcount, MPI_Datatype sendtype,
                                   const void *sendvals, int *recv_nnz, int **src, int recvcount,
                                   MPI_Datatype recvtype, void **recvvals, MPI_Comm comm);
TUCOLL_API int tucoll_alltoall_crs_with(const char *spec, int send_nnz, const int dest[], int sendcount,
                                        MPI_Datatype sendtype, const void *sendvals, int *recv_nnz, int **src,
                                        int recvcount, MPI_Datatype recvtype, void **recvvals, MPI_Comm comm);

/* Variable-size messages (MPIX_Alltoallv_crs): message i is sendcounts[i] elements at element
 * sdispls[i] of sendvals, which holds send_size elements. *recv_nnz and *recv_size (elements) are
 * the receive totals when known, else -1 (*recv_nnz a collective choice, as above); on return
 * they hold them, and *src, *recvcounts, *rdispls (elements, back to back) and *recvvals
 * describe the messages, sorted by source. */
TUCOLL_API int tucoll_alltoallv_crs(int send_nnz, int send_size, const int dest[], const int sendcounts[],
                                    const int sdispls[], MPI_Datatype sendtype, const void *sendvals,
                                    int *recv_nnz, int *recv_size, int **src, int **recvcounts, int **rdispls,
                                    MPI_Datatype recvtype, void **recvvals, MPI_Comm comm);
TUCOLL_API int tucoll_alltoallv_crs_with(const char *spec, int send_nnz, int send_size, const int dest[],
                                         const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                                         const void *sendvals, int *recv_nnz, int *recv_size, int **src,
                                         int **recvcounts, int **rdispls, MPI_Datatype recvtype, void **recvvals,
                                         MPI_Comm comm);

/* Releases memory tucoll allocated for a caller (NULL is fine). */
TUCOLL_API void tucoll_free(void *ptr);

/* ---- Errors -------------------------------------------------------------------------------- */

/* A readable message for an error code a tucoll call returned. When `errcode` is the code of the
 * most recent failed tucoll call on this thread, the message says what was wrong with which
 * argument; otherwise it is MPI's text for the code. The string stays valid until the next
 * tucoll call on this thread. */
TUCOLL_API const char *tucoll_error_string(int errcode);

/* ---- Statistics of the last call ------------------------------------------------------------ */

typedef struct tucoll_stats {
    char collective[32];    /* "alltoallv", ...                                          */
    char algorithm[128];    /* spec string actually run, all parameters resolved          */
    char path[96];          /* how it ran: "direct", "packed", or a fallback explanation  */
    int64_t rounds;         /* point-to-point communication rounds of the schedule        */
    int64_t messages;       /* point-to-point data messages this rank sent                */
    int64_t bytes_sent;     /* payload bytes this rank sent (metadata excluded)           */
    int64_t temp_bytes;     /* payload bytes this rank moved through temporary buffers    */
    int64_t scratch_bytes;  /* bytes of temporary buffers holding blocks between rounds    */
    int64_t pack_bytes;     /* bytes of buffers used to pack non-contiguous datatypes      */
    int64_t staging_bytes;  /* bytes of buffers holding blocks in flight within a round    */
    int64_t inter_region_messages; /* messages sent to ranks on other nodes (sparse exchanges) */
    int64_t reserved[6];
} tucoll_stats_t;

/* Statistics of the last tucoll collective this rank completed on `comm` (local, not collective).
 * Returns MPI_ERR_OTHER when no tucoll call has run on `comm` yet. */
TUCOLL_API int tucoll_get_stats(MPI_Comm comm, tucoll_stats_t *stats);

/* Under TUCOLL_VERBOSE=1, rank 0 of each communicator logs to stderr what ran, once per collective
 * and algorithm: "[tucoll] alltoallv on NAME (P=..): SPEC (PATH)". On by default; the interposer
 * turns it off (0) and logs each MPI call under its own name instead. */
TUCOLL_API void tucoll_set_choice_log(int on);

/* ---- Registry introspection ------------------------------------------------------------------ */
/* These need no MPI_Init: tools (tucoll sweep, sim, tune) ask the library through them. */

/* What a spec means on a communicator of `nprocs` ranks with `ppn` per node (0: one node). */
typedef struct tucoll_spec_properties {
    char canonical[128];      /* the spec with every parameter resolved, as statistics report it    */
    int64_t concurrent_flows; /* point-to-point flows the whole job has in flight at once at most;
                                 -1 when not known (the vendor's, dynamic exchanges)                */
    int uses_max_block;       /* it reduces M, the largest block, itself there (TuNA's T): under auto
                                 it takes auto's reduction instead                                  */
    int meta;                 /* it chooses another algorithm at run time (auto)                     */
    int reserved[8];
} tucoll_spec_properties_t;

/* Fills *out for `spec` of `collective`; MPI_ERR_ARG with a message (tucoll_error_string) when the
 * spec is not valid there — unknown name or parameter, a value out of its range at this P and Q. */
TUCOLL_API int tucoll_spec_properties(const char *collective, const char *spec, int nprocs, int ppn,
                                      tucoll_spec_properties_t *out);

/* The range of a parameter at P = nprocs, Q = ppn: *min, *max (-1: unbounded) and *span, the
 * largest value that behaves differently from all larger ones (a batch of more messages than
 * there are is all of them). MPI_ERR_ARG for an unknown collective, algorithm or parameter. */
TUCOLL_API int tucoll_param_range(const char *collective, const char *algorithm, const char *param, int nprocs,
                                  int ppn, long *min, long *max, long *span);

/* Number of algorithms registered for a collective ("alltoallv"), or -1 if unknown. */
TUCOLL_API int tucoll_num_algorithms(const char *collective);

/* Name of the index-th algorithm of a collective, or NULL. */
TUCOLL_API const char *tucoll_algorithm_name(const char *collective, int index);

/* One line per parameter, "name in [min, max], default D: doc"; "" when it has none; NULL if
 * the algorithm is unknown. */
TUCOLL_API const char *tucoll_algorithm_params(const char *collective, const char *algorithm);

/* The whole registry (every collective, algorithm, parameter and constraint) as JSON. */
TUCOLL_API const char *tucoll_registry_json(void);

/* Parses a spec string ("tuna:radix=4,block_count=2K", "ipc:copy=hybrid") without a registry:
 * *json points to {"name": ..., "params": {key: integer or word, ...}} (values as written, K/M/G
 * suffixes applied), valid until the calling thread's next call. MPI_ERR_ARG with a message when
 * it is malformed. The one parser of the spelling, for tools that read specs from data. */
TUCOLL_API int tucoll_spec_parse(const char *spec, const char **json);

/* Checks a spec string against the registry for a communicator of `nprocs` ranks without
 * running anything: MPI_SUCCESS or MPI_ERR_ARG (see tucoll_error_string). Local. */
TUCOLL_API int tucoll_check_spec(const char *collective, const char *spec, int nprocs);

/* ---- Tuning tables -------------------------------------------------------------------------- */

/* The tables `auto` reads (docs/TUNING.md), read, checked, merged and written by the same code, for
 * tools that make them. Local: no MPI_Init needed. Strings returned stay valid until the next
 * call on the same table or its free. */
typedef struct tucoll_tuning_table tucoll_tuning_table_t;

/* Parses a table for `collective` from JSON text; MPI_ERR_ARG with a message when it is not one.
 * `origin` names it in messages (a path). */
TUCOLL_API int tucoll_tuning_table_parse(const char *collective, const char *text, const char *origin,
                                         tucoll_tuning_table_t **table);
TUCOLL_API void tucoll_tuning_table_free(tucoll_tuning_table_t *table);

/* MPI_ERR_ARG naming the first spec the library would not run at its entry's shape. */
TUCOLL_API int tucoll_tuning_table_check(const tucoll_tuning_table_t *table);

/* The table as JSON in the file format (what tucoll_tuning_table_parse reads back). */
TUCOLL_API const char *tucoll_tuning_table_json(tucoll_tuning_table_t *table);

/* The entry auto uses on P = nprocs, Q = ppn (the nearest shape) as JSON; NULL when it has none. */
TUCOLL_API const char *tucoll_tuning_table_entry(tucoll_tuning_table_t *table, int nprocs, int ppn);

/* The spec auto picks at (nprocs, ppn) for the feature values (one per feature, in the table's
 * order); MPI_ERR_ARG when the table has no entries or nvalues is not the number of features. */
TUCOLL_API int tucoll_tuning_table_lookup(tucoll_tuning_table_t *table, int nprocs, int ppn, const double *values,
                                          int nvalues, const char **spec);

/* Whether auto reduces the block-size features for a call at (nprocs, ppn) under this table, in
 * *reduces: 0 where the entry it uses names one spec for every workload (decided with no
 * communication), 1 where its rules look at the features. MPI_ERR_ARG when the table has no
 * entries. */
TUCOLL_API int tucoll_tuning_table_reduces(tucoll_tuning_table_t *table, int nprocs, int ppn, int *reduces);

/* Adds the entries of an online tuning table (TUCOLL_TUNING_SAVE) for the shapes `table` has none
 * for; *added says how many. MPI_ERR_ARG when the features cannot join. */
TUCOLL_API int tucoll_tuning_table_merge(tucoll_tuning_table_t *table, const tucoll_tuning_table_t *online,
                                         const char *origin, int *added);

/* ---- Per-communicator settings ------------------------------------------------------------- */

/* Declares `ppn` ranks per node for `comm` (ranks 0..ppn-1 form node 0, and so on), overriding
 * MPI_Comm_split_type and TUCOLL_PPN; ppn = 0 returns to automatic detection. Collective over
 * `comm`; every rank must pass the same value. */
TUCOLL_API int tucoll_comm_set_ppn(MPI_Comm comm, int ppn);

/* Declares the node (region) of the calling rank: ranks passing the same non-negative id form a
 * node, nodes are numbered by their lowest rank, and local ranks follow rank order. Unlike
 * tucoll_comm_set_ppn this describes any placement, e.g. round-robin. Collective over `comm`. */
TUCOLL_API int tucoll_comm_set_node(MPI_Comm comm, int node_id);

typedef struct tucoll_topology {
    int node;        /* index of this rank's node (region), 0 .. num_nodes-1           */
    int local_rank;  /* rank within the node                                           */
    int local_size;  /* ranks on this rank's node                                      */
    int num_nodes;
    int ppn;         /* ranks per node when every node has the same number, else 0      */
    int max_local_size; /* ranks on the largest node                                     */
    int regular;     /* 1 when ppn > 0 and ranks are numbered node by node             */
    int source;      /* 0 = MPI_Comm_split_type, 1 = TUCOLL_PPN, 2 = tucoll_comm_set_ppn,
                        3 = tucoll_comm_set_node                                        */
} tucoll_topology_t;

/* The topology tucoll uses for `comm` (collective on the first tucoll use of `comm`). */
TUCOLL_API int tucoll_comm_get_topology(MPI_Comm comm, tucoll_topology_t *topology);

/* Frees the scratch buffers cached on `comm`. They are rebuilt on demand. It also forgets what
   `auto` agreed on at its first call on `comm` (the tuning table, its entry, online tuning's
   choices), so that the next call agrees again — collectively: call it on every rank of `comm`
   between the same two collective calls. A changed TUCOLL_TUNING_FILE path is then read; a file
   changed in place under the same path is not (tables are read once per process and path). The
   environment's choices for `comm` (TUCOLL_<COLLECTIVE>, TUCOLL_CHECK), read when tucoll first
   used it, are read again too. */
TUCOLL_API int tucoll_comm_release_scratch(MPI_Comm comm);

/* ---- Recording a program's exchanges ---------------------------------------------------------- */
/* Records, per communicator, the P x P byte matrix of every alltoallv, alltoall, allgather and
   allgatherv call (what each rank sends to each rank), counted once per distinct matrix, with
   what ran and how long it took: rank 0 of each communicator writes DIR/<communicator>/manifest.json
   and one <id>.pattern file per distinct matrix (the format `tucoll-bench --dist file:` reads).
   `tucoll tune DIR` replays them on a simulated cluster and writes a tuning table for them.
   Setting TUCOLL_RECORD=DIR starts a recording at the first call. A recorded call costs a hash
   of the rank's counts; every 32 calls one allreduce of 512 bytes agrees on their matrices, and
   a matrix not seen before on the communicator is gathered to rank 0. Every process must record
   alike — call these on every process between the same collective calls, as an environment
   variable set for the whole job would. tucoll_record_stop agrees on the last calls and writes
   every manifest (collective over each recorded communicator; also done when a communicator is
   freed and at MPI_Finalize) and ends the recording. Nonblocking calls and each start of a
   persistent exchange are recorded; the sparse exchanges are not. */
TUCOLL_API int tucoll_record_start(const char *dir);
TUCOLL_API int tucoll_record_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* TUCOLL_H */

/*
 * smpi_collectives.c — times MPI_Bcast, MPI_Reduce, MPI_Allreduce and MPI_Alltoall under
 * SimGrid's SMPI, as an oracle for hetsim's collectives (src/mpi/collective.rs).
 *
 * Build:  smpicc -O2 -o smpi_collectives smpi_collectives.c
 * Run:    smpirun -np R -platform P.xml -hostfile H ./smpi_collectives [options] SIZE...
 *         (scripts/oracle-smpi-collectives.sh drives it; see docs/validation/README.md)
 *
 * Options:
 *   -c LIST   collectives to time, comma separated (bcast,reduce,allreduce,alltoall; default all)
 *   -m BYTES  skip reduce/allreduce above BYTES when ranks > -r (memory guard, see below)
 *   -r RANKS  rank count above which -m applies (default: never)
 *
 * For every collective and every SIZE (bytes; for alltoall the size sent to EACH peer):
 * one untimed warm-up call (SMPI builds its SMP-aware leader/intra communicators on the first
 * collective of a communicator, which costs simulated time), then MPI_Barrier; rank 0 broadcasts
 * a start time t0 = (its MPI_Wtime() after the barrier) + 10 ms and every rank waits until t0
 * (smpi_execute_benched of the difference), so that all ranks enter the collective at the same
 * simulated instant, as hetsim's ranks do at time 0 (a barrier alone lets ranks leave it up to a
 * latency apart, and eager messages then make the per-rank durations meaningless); then the
 * collective and t1 = MPI_Wtime(); the result is the maximum over ranks of t1 - t0 (MPI_Reduce
 * with MPI_MAX to rank 0, after the timed region).
 * Rank 0 prints one line per cell:  RESULT <collective> <ranks> <bytes> <seconds>
 *
 * Buffers come from SMPI_SHARED_MALLOC: SMPI does not copy message payloads whose source is a
 * shared buffer, so large messages cost little memory. Exception: alltoall copies each rank's
 * own block (at its own offset) with memcpy, touching ranks x bytes of shared memory; the
 * driver script skips alltoall cells above 8 GiB per buffer.
 * Reductions use MPI_SUM on MPI_DOUBLE (bytes / 8 elements), or MPI_UNSIGNED_CHAR when the size
 * is not a multiple of 8 (1 B). SMPI's internal temporary buffers of reduce/allreduce are plain
 * allocations that its two-level algorithms fill with memcpy, hence the -m/-r guard.
 * Root is rank 0 for bcast and reduce.
 */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BCAST, REDUCE, ALLREDUCE, ALLTOALL, NCOLL };
static const char *names[NCOLL] = {"bcast", "reduce", "allreduce", "alltoall"};

static void run(int coll, size_t bytes, int ranks, void *sbuf, void *rbuf)
{
    MPI_Datatype t = MPI_DOUBLE;
    int count = (int)(bytes / 8);
    if (bytes % 8 != 0) {
        t = MPI_UNSIGNED_CHAR;
        count = (int)bytes;
    }
    switch (coll) {
    case BCAST:
        MPI_Bcast(sbuf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(sbuf, rbuf, count, t, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, count, t, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, (int)bytes, MPI_BYTE, rbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        break;
    }
    (void)ranks;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);

    int want[NCOLL] = {1, 1, 1, 1};
    double guard_bytes = -1.0;
    int guard_ranks = 1 << 30;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            char *list = strdup(argv[++i]);
            for (int c = 0; c < NCOLL; c++)
                want[c] = 0;
            for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ","))
                for (int c = 0; c < NCOLL; c++)
                    if (strcmp(tok, names[c]) == 0)
                        want[c] = 1;
            free(list);
        } else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) {
            guard_bytes = atof(argv[++i]);
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            guard_ranks = atoi(argv[++i]);
        } else {
            if (rank == 0)
                fprintf(stderr, "unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int nsizes = argc - i;
    size_t *sizes = malloc(sizeof(size_t) * (nsizes > 0 ? nsizes : 1));
    size_t maxb = 1;
    for (int s = 0; s < nsizes; s++) {
        sizes[s] = (size_t)strtoull(argv[i + s], NULL, 10);
        if (sizes[s] > maxb)
            maxb = sizes[s];
    }
    size_t cap = maxb * (size_t)ranks; /* alltoall needs ranks x bytes */
    void *sbuf = SMPI_SHARED_MALLOC(cap);
    void *rbuf = SMPI_SHARED_MALLOC(cap);

    for (int c = 0; c < NCOLL; c++) {
        if (!want[c])
            continue;
        for (int s = 0; s < nsizes; s++) {
            size_t b = sizes[s];
            if ((c == REDUCE || c == ALLREDUCE) && guard_bytes >= 0 && (double)b > guard_bytes &&
                ranks > guard_ranks) {
                if (rank == 0)
                    printf("SKIPPED %s %d %zu memory-guard\n", names[c], ranks, b);
                continue;
            }
            run(c, b, ranks, sbuf, rbuf); /* warm-up */
            MPI_Barrier(MPI_COMM_WORLD);
            /* Common start: rank 0 picks T0 = its time after the barrier + 10 ms (more than the
             * broadcast of T0 takes), every rank waits until T0 in simulated time. */
            double t0 = MPI_Wtime() + 1e-2;
            MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            double now = MPI_Wtime();
            if (t0 > now)
                smpi_execute_benched(t0 - now);
            double tstart = MPI_Wtime();
            run(c, b, ranks, sbuf, rbuf);
            double t1 = MPI_Wtime();
            double d = t1 - t0, dmax = 0.0, late = tstart - t0, latemax = 0.0;
            MPI_Reduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&late, &latemax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0 && latemax > 1e-12)
                printf("WARNING %s %d %zu start skew %.3e s\n", names[c], ranks, b, latemax);
            if (rank == 0) {
                printf("RESULT %s %d %zu %.12e\n", names[c], ranks, b, dmax);
                fflush(stdout);
            }
        }
    }
    SMPI_SHARED_FREE(sbuf);
    SMPI_SHARED_FREE(rbuf);
    free(sizes);
    MPI_Finalize();
    return 0;
}

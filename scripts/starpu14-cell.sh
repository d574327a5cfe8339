# How one cell of the StarPU 1.4 oracle runs, shared by scripts/oracle-starpu14.sh and
# scripts/starpu14-sensitivity.sh (sourced, not run). It defines:
#
#   starpu14_examples          the examples the oracle runs, as their paths under a StarPU build
#                              tree's examples/ (an install has them by base name under
#                              lib/starpu/examples/)
#   starpu14_example APP N TILE
#                              sets example (one of starpu14_examples) and the array
#                              example_args: the command line of APP (chol, lu, gemm) at order N
#                              with tiles of TILE
#   starpu14_variant_env VARIANT
#                              appends to the array envs the StarPU environment of VARIANT
#                              (default, cpu-only, gpu-only, costs-off, transfers-off); returns 1
#                              for an unknown variant
# shellcheck shell=bash

starpu14_examples="cholesky/cholesky_implicit lu/lu_implicit_example_float mult/sgemm"

starpu14_example() {
    local nb=$(($2 / $3))
    case "$1" in
        chol) example=cholesky/cholesky_implicit; example_args=(-size "$2" -nblocks "$nb") ;;
        lu) example=lu/lu_implicit_example_float; example_args=(-size "$2" -nblocks "$nb") ;;
        gemm) example=mult/sgemm; example_args=(-3d -size "$2" -nblocks "$nb" -iter 1) ;;
        *) echo "unknown application $1" >&2; return 1 ;;
    esac
}

starpu14_variant_env() {
    case "$1" in
        default) ;;
        cpu-only) envs+=(STARPU_NCUDA=0) ;;
        gpu-only) envs+=(STARPU_NCPU=0) ;;
        costs-off) envs+=(STARPU_SIMGRID_TRANSFER_COST=0 STARPU_SIMGRID_TASK_SUBMIT_COST=0
                          STARPU_SIMGRID_TASK_PUSH_COST=0 STARPU_SIMGRID_FETCHING_INPUT_COST=0
                          STARPU_SIMGRID_CUDA_QUEUE_COST=0 STARPU_SIMGRID_CUDA_MALLOC_COST=0
                          STARPU_SIMGRID_SCHED_COST=0) ;;
        transfers-off) envs+=(STARPU_SIMGRID_TRANSFER_COST=0) ;;
        *) echo "unknown variant $1" >&2; return 1 ;;
    esac
}

#!/bin/bash
# The naive job-mapping pattern seen in public examples, kept only as the benchmark baseline for
# prolog/dcgm-job-mapping. Do not deploy it: no lock (concurrent prologs lose ids), `echo >>` can
# duplicate ids on a repeated prolog, and nothing stops a failure from failing the job.
#   usage: job-mapping-naive.sh prolog|epilog   (SLURM_JOB_ID, SLURM_JOB_GPUS from the env)
dir="${DCGM_HPC_JOB_MAPPING_DIR:-/var/lib/dcgm-exporter/job-mapping}"
case "$1" in
prolog)
    mkdir -p "$dir"
    for gpu in ${SLURM_JOB_GPUS//,/ }; do
        echo "$SLURM_JOB_ID" >>"$dir/$gpu"
    done
    ;;
epilog)
    for gpu in ${SLURM_JOB_GPUS//,/ }; do
        sed -i "/^${SLURM_JOB_ID}\$/d" "$dir/$gpu"
    done
    ;;
esac

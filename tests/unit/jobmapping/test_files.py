"""The mapping itself: what the files hold after each prolog/epilog, and the log line."""

import os
import re

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_first_job_creates_the_directory_and_one_file_per_gpu(node):
    run = node.prolog(42, "0,1")

    run.assert_ok(42)
    assert node.read("0") == b"42\n"
    assert node.read("1") == b"42\n"
    assert oct(node.dir.stat().st_mode & 0o777) == "0o755"
    assert oct((node.dir / "0").stat().st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(node.dir)) == [".lock", "0", "1"]  # no temp file left behind


def test_log_line_has_every_field_in_order(node):
    run = node.prolog(42, "0,1")

    assert list(run.log) == [
        *("ts", "prog", "action", "job_id", "node", "gpus", "dir"),
        *("result", "changed", "duration_ms"),
    ]
    assert TS.match(run.log["ts"])
    assert run.log["prog"] == "dcgm-job-mapping"
    assert run.log["action"] == "prolog"
    assert run.log["node"] == "dgx-001"
    assert run.log["gpus"] == "0,1"
    assert run.log["dir"] == str(node.dir)
    assert run.log["changed"] == "2"
    assert 0 < float(run.log["duration_ms"]) < 5000


def test_second_job_on_the_same_gpu_is_appended(node):
    node.prolog(42, "0,1")
    node.prolog(43, "1").assert_ok(43)

    assert node.read("0") == b"42\n"
    assert node.read("1") == b"42\n43\n"


def test_repeated_prolog_adds_no_duplicate_and_keeps_the_order(node):
    node.prolog(42, "0")
    node.prolog(43, "0")
    again = node.prolog(42, "0")

    again.assert_ok(42)
    assert again.log["changed"] == "0"
    assert node.read("0") == b"42\n43\n"


def test_epilog_removes_only_its_own_id(node):
    for job in (42, 43, 44):
        node.prolog(job, "0,1")
    node.prolog(45, "1")

    node.epilog(43, "0,1").assert_ok(43)

    assert node.read("0") == b"42\n44\n"
    assert node.read("1") == b"42\n44\n45\n"


def test_epilog_of_an_unknown_job_rewrites_nothing(node):
    node.prolog(42, "0,1")
    inode = (node.dir / "0").stat().st_ino

    run = node.epilog(99, "0,1")

    run.assert_ok(99)
    assert run.log["changed"] == "0"
    assert node.read("0") == b"42\n"
    assert (node.dir / "0").stat().st_ino == inode  # not even replaced by an identical copy


def test_last_job_leaving_leaves_an_empty_file(node):
    node.prolog(42, "3")
    node.epilog(42, "3").assert_ok(42)

    assert node.read("3") == b""  # the exporter keeps the GPU's series, unlabelled

    again = node.epilog(42, "3")  # a repeated epilog changes nothing
    again.assert_ok(42)
    assert again.log["changed"] == "0"
    assert node.read("3") == b""


def test_epilog_creates_no_file(node):
    node.prolog(42, "0")

    node.epilog(42, "0,5").assert_ok(42)

    assert sorted(os.listdir(node.dir)) == [".lock", "0"]


def test_requeued_job_runs_prolog_epilog_prolog(node):
    node.prolog(42, "0")
    node.epilog(42, "0")
    node.prolog(42, "0").assert_ok(42)

    assert node.read("0") == b"42\n"


def test_epilog_also_sweeps_its_id_from_gpus_it_no_longer_names(node):
    node.prolog(42, "0,1")
    node.prolog(43, "1")

    run = node.epilog(42, "0")

    run.assert_ok(42)
    assert run.log["swept"] == "1"
    assert node.read("1") == b"43\n"


def test_duplicates_and_missing_newline_from_another_writer_are_normalised(node):
    node.dir.mkdir()
    (node.dir / "0").write_bytes(b"7\n7\n8")

    node.prolog(42, "0").assert_ok(42)

    assert node.read("0") == b"7\n8\n42\n"


def test_cuda_visible_devices_is_the_fallback_when_it_holds_indices(node):
    node.prolog(42, None, CUDA_VISIBLE_DEVICES="2,3").assert_ok(42)

    assert node.read("2") == b"42\n"
    assert node.read("3") == b"42\n"


def test_cuda_visible_devices_with_uuids_is_refused(node):
    uuids = "GPU-6a3d1b2c-0000-1111-2222-333344445555,GPU-7b4e2c3d-0000-1111-2222-333344445555"

    run = node.prolog(42, None, CUDA_VISIBLE_DEVICES=uuids)

    run.assert_skipped(42, "holds no GPU indices")
    assert not node.dir.exists()


def test_slurm_job_gpus_wins_over_cuda_visible_devices(node):
    """Slurm 25.11's shape: indices in SLURM_JOB_GPUS, UUIDs in CUDA_VISIBLE_DEVICES."""
    run = node.prolog(42, "1", CUDA_VISIBLE_DEVICES="GPU-6a3d1b2c-0000-1111-2222-333344445555")

    run.assert_ok(42)
    assert sorted(os.listdir(node.dir)) == [".lock", "1"]


def test_gpu_indices_are_normalised_to_the_exporters_gpu_label(node):
    node.prolog(42, " 00, 1,1").assert_ok(42)

    assert sorted(os.listdir(node.dir)) == [".lock", "0", "1"]


def test_percent_n_expands_to_the_node_name(node):
    """Rack containers run many slurmd: one directory and one log per emulated node."""
    env = {
        "DCGM_HPC_JOB_MAPPING_DIR": str(node.root / "%n"),
        "DCGM_JOB_MAPPING_LOG": str(node.base / "log" / "%n.log"),
    }
    node.log = node.base / "log" / "dgx-001.log"

    node.prolog(42, "0", **env).assert_ok(42)

    assert (node.root / "dgx-001" / "0").read_bytes() == b"42\n"
    assert not (node.root / "%n").exists()


def test_config_file_sets_dir_and_log(node):
    conf_dir = node.root / "from-conf"
    conf_log = node.base / "log" / "from-conf.log"
    node.conf.write_text(
        f'# written by ansible\n\nDCGM_HPC_JOB_MAPPING_DIR = "{conf_dir}"\nDCGM_JOB_MAPPING_LOG={conf_log}\n'
    )
    node.log = conf_log

    node.prolog(42, "0", DCGM_HPC_JOB_MAPPING_DIR=None, DCGM_JOB_MAPPING_LOG=None).assert_ok(42)

    assert (conf_dir / "0").read_bytes() == b"42\n"


def test_environment_overrides_the_config_file(node):
    node.conf.write_text(f"DCGM_HPC_JOB_MAPPING_DIR={node.root / 'from-conf'}\n")

    node.prolog(42, "0").assert_ok(42)

    assert node.read("0") == b"42\n"
    assert not (node.root / "from-conf").exists()


def test_unknown_config_key_is_reported_but_the_mapping_is_done(node):
    node.conf.write_text("DCGM_HPC_JOB_MAPING_DIR=/typo\n")

    run = node.prolog(42, "0")

    run.assert_skipped(42, "dcgm-job-mapping.conf:1: ignored", result="partial")
    assert node.read("0") == b"42\n"


def test_mig_instances_are_named_gpu_dot_instance(node):
    mig = {"DCGM_JOB_MAPPING_MIG": "1", "DCGM_JOB_MAPPING_MIG_MAP": "0:0.1,1:0.2,2:1.7"}

    run = node.prolog(42, "0,2", **mig)

    run.assert_ok(42)
    assert run.log["gpus"] == "0.1,1.7"
    assert sorted(os.listdir(node.dir)) == [".lock", "0.1", "1.7"]
    node.epilog(42, "0,2", **mig).assert_ok(42)
    assert node.read("0.1") == node.read("1.7") == b""


def test_mig_index_without_a_map_entry_is_reported(node):
    mig = {"DCGM_JOB_MAPPING_MIG": "1", "DCGM_JOB_MAPPING_MIG_MAP": "0:0.1"}

    run = node.prolog(42, "0,5", **mig)

    run.assert_skipped(42, "gpu 5: no DCGM_JOB_MAPPING_MIG_MAP entry", result="partial")
    assert node.read("0.1") == b"42\n"


def test_mig_map_from_the_config_file(node):
    node.conf.write_text("DCGM_JOB_MAPPING_MIG=1\nDCGM_JOB_MAPPING_MIG_MAP=3:1.4 4:1.5\n")

    node.prolog(42, "4").assert_ok(42)

    assert node.read("1.5") == b"42\n"


def test_action_from_the_directory_name_without_slurm_script_context(node):
    node.run("", 42, "0", script=node.PROLOG).assert_ok(42)
    assert node.read("0") == b"42\n"

    run = node.run("", 42, "0", script=node.EPILOG)  # the symlink keeps its own directory name

    run.assert_ok(42)
    assert run.log["action"] == "epilog"
    assert node.read("0") == b""


def test_explicit_argument_for_manual_runs(node):
    node.prolog(42, "0")

    run = node.run("prolog", 42, "0", args=("epilog",))

    run.assert_ok(42)
    assert run.log["action"] == "epilog"
    assert node.read("0") == b""


def test_slurm_script_context_decides_over_the_directory_name(node):
    node.prolog(42, "0", script=node.EPILOG)  # SLURM_SCRIPT_CONTEXT=prolog_slurmd

    assert node.read("0") == b"42\n"


# --- the GPUs' UUIDs on the line (DCGM_JOB_MAPPING_GPU_UUIDS) ---

UUIDS = "0, GPU-8b2281de-6d3c-22ed-0ec8-d3b864870b8b\n1, GPU-11111111-2222-3333-4444-555555555555\n"


def test_the_line_names_the_uuids_of_the_jobs_gpus_from_nvidia_smis_csv(node):
    uuids = node.base / "gpu-uuids.csv"
    uuids.write_text(UUIDS)

    run = node.prolog(42, "1,0", DCGM_JOB_MAPPING_GPU_UUIDS=str(uuids))

    run.assert_ok(42)
    assert list(run.log)[5:8] == ["gpus", "uuids", "dir"]
    first, second = (line.partition(", ")[2] for line in UUIDS.splitlines())
    assert run.log["uuids"] == f"{second},{first}"


def test_a_mig_instance_is_named_by_its_parent_gpus_uuid(node):
    uuids = node.base / "gpu-uuids.csv"
    uuids.write_text(UUIDS)
    mig = {"DCGM_JOB_MAPPING_MIG": "1", "DCGM_JOB_MAPPING_MIG_MAP": "3:1.4"}

    run = node.prolog(42, "3", DCGM_JOB_MAPPING_GPU_UUIDS=str(uuids), **mig)

    assert (run.log["gpus"], run.log["uuids"]) == ("1.4", "GPU-11111111-2222-3333-4444-555555555555")


def test_a_missing_or_bad_uuid_file_is_logged_and_the_mapping_still_done(node):
    missing = node.base / "nowhere.csv"
    run = node.prolog(42, "0", DCGM_JOB_MAPPING_GPU_UUIDS=str(missing))
    assert run.log["result"] == "ok" and "uuids" not in run.log
    assert f"gpu uuids {missing}: No such file or directory" in run.log["error"]
    assert node.read("0") == b"42\n"

    bad = node.base / "bad.csv"
    bad.write_text("0, GPU-8b2281de\nindex, uuid\n")
    run = node.prolog(43, "0", DCGM_JOB_MAPPING_GPU_UUIDS=str(bad))
    assert run.log["result"] == "ok" and "uuids" not in run.log
    assert f"gpu uuids {bad}:2: not '<index>, GPU-<uuid>'" in run.log["error"]


def test_a_gpu_the_uuid_file_does_not_list_names_no_uuid_at_all(node):
    uuids = node.base / "gpu-uuids.csv"
    uuids.write_text(UUIDS)

    run = node.prolog(42, "0,5", DCGM_JOB_MAPPING_GPU_UUIDS=str(uuids))

    assert run.log["result"] == "ok" and "uuids" not in run.log
    assert run.log["error"] == f"gpu uuids {uuids}: no UUID for GPU 5"

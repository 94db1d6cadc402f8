"""The pinned Slurm exporter construct (SckyzO/slurm_exporter): its binary; its role is
ansible/roles/slurm_exporter."""

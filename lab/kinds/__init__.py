"""Lab kinds (Slurm, Run:ai): load, validate, up and down over the one bring-up."""

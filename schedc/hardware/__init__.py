"""Readers of the files users have about their machines: NCCL topology files
(`nccl_topo`) and `nvidia-smi topo -m` matrices (`smi`), each → one host (`system.HostModel`),
with its bandwidths derived by NCCL's rules (`rules`)."""

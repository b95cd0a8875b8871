"""Rehearsing a compiled pipeline on one machine: KFP's driver and launcher played (kfp_player.py), each task a
process or a container of the kflow image (podman.py), before `kflow submit` sends it to a cluster."""

# shellcheck shell=bash
# The programs and the data set of the integration tests, sourced from the repository's root:
# S (splitnic, an absolute path; $SPLITNIC), B (its build folder), NIC and HOST (the servers;
# $SPLITNIC_NIC, $SPLITNIC_HOST), D, IMG and LAB (Fashion-MNIST's test set), PY (Debian's
# python3, with numpy and scapy).
S=$(realpath "${SPLITNIC:-build/splitnic}")
B=$(dirname "$S")
NIC=${SPLITNIC_NIC:-$B/splitnic-nic}
HOST=${SPLITNIC_HOST:-$B/splitnic-host}
D=/usr/share/datasets/fashion-mnist
IMG=$D/t10k-images-idx3-ubyte.gz
LAB=$D/t10k-labels-idx1-ubyte.gz
PY=/usr/bin/python3

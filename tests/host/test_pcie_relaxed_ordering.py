"""Relaxed ordering on the PCIe path to a NIC, read from fake sysfs trees whose config files hold the bit set,
clear, cut short (what a user other than root reads), unreadable or absent."""

from __future__ import annotations

import os

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sysfs_builder import h20_node, pci_config, relaxed_path, switch_chain, write_config

from pdrepro.core.errors import UserError
from pdrepro.host import pcie, sysfs


def _nic_path(root):
    (dev,) = [d for d in sysfs.read_rdma_devices(root) if d.name == "mlx5_0"]
    return dev.pci_path


def test_every_function_on_the_path_allows_it(tmp_path):
    fs = h20_node(tmp_path, nics=1)
    relaxed_path(fs, switch_chain(0, 2))
    hops = pcie.path_hops(tmp_path, _nic_path(tmp_path))
    # The NIC first, then its three bridges up to the root port; the root bus has no config of its own.
    assert [h.bdf for h in hops] == list(reversed(switch_chain(0, 2)[1:]))
    assert all(h.enabled is True for h in hops)
    assert pcie.allowed(hops) is True


@pytest.mark.parametrize("off_at", [1, 2, 4])
def test_one_function_with_the_bit_clear_turns_the_path_off(tmp_path, off_at):
    fs = h20_node(tmp_path, nics=1)
    chain = switch_chain(0, 2)
    relaxed_path(fs, chain, off_at=off_at)
    hops = pcie.path_hops(tmp_path, _nic_path(tmp_path))
    off = [h.bdf for h in hops if h.enabled is False]
    assert off == [chain[off_at]]
    assert pcie.allowed(hops) is False


def test_the_64_byte_header_of_a_user_other_than_root_is_unknown(tmp_path):
    fs = h20_node(tmp_path, nics=1)
    relaxed_path(fs, switch_chain(0, 2), size=pcie.HEADER_BYTES)
    hops = pcie.path_hops(tmp_path, _nic_path(tmp_path))
    assert all(h.enabled is None and "needs root" in h.note for h in hops)
    assert pcie.allowed(hops) is None


def test_a_short_file_is_unknown_not_off(tmp_path):
    fs = h20_node(tmp_path, nics=1)
    chain = switch_chain(0, 2)
    relaxed_path(fs, chain)
    write_config(fs, chain, pci_config(True)[:20])
    hops = pcie.path_hops(tmp_path, _nic_path(tmp_path))
    assert hops[0].enabled is None and "less than the 64-byte header" in hops[0].note
    assert pcie.allowed(hops) is None  # the rest are on, the NIC unknown: never a pass


def test_an_unreadable_or_missing_file_is_unknown(tmp_path):
    fs = h20_node(tmp_path, nics=1)
    chain = switch_chain(0, 2)
    relaxed_path(fs, chain)
    nic_config = write_config(fs, chain, pci_config(True))
    (tmp_path / "devices" / os.path.join(*chain[:2]) / "config").unlink()
    if os.geteuid() != 0:
        nic_config.chmod(0)
    hops = {h.bdf: h for h in pcie.path_hops(tmp_path, _nic_path(tmp_path))}
    assert hops[chain[1]].enabled is None and "missing" in hops[chain[1]].note
    if os.geteuid() != 0:
        assert hops[chain[-1]].enabled is None and "cannot be read" in hops[chain[-1]].note


def test_a_fifo_where_the_config_belongs_is_one_line(tmp_path):
    fs = h20_node(tmp_path, nics=1)
    chain = switch_chain(0, 2)
    relaxed_path(fs, chain)
    path = tmp_path / "devices" / os.path.join(*chain) / "config"
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(UserError, match="FIFO"):
        pcie.path_hops(tmp_path, _nic_path(tmp_path))


def test_a_virtual_nic_has_no_path_and_no_answer():
    assert pcie.path_hops(sysfs.DEFAULT_ROOT, ()) == []
    assert pcie.allowed([]) is None


def test_a_capability_list_that_loops_is_unknown():
    data = bytearray(pci_config(True))
    data[0x34] = 0x50
    data[0x50], data[0x51] = 0x01, 0x50  # a power-management capability pointing at itself
    assert pcie.read_bit(bytes(data)) == (None, "the capability list loops: not a config space the kernel shows")


@settings(max_examples=examples(200))
@given(st.binary(max_size=512))
def test_any_bytes_give_an_answer_or_unknown_never_a_crash(data):
    enabled, note = pcie.read_bit(data)
    assert enabled in (True, False, None) and note
    if len(data) <= pcie.HEADER_BYTES:
        # Capabilities lie past the 64-byte header: a bit read from the header alone would be a guess.
        assert enabled is None

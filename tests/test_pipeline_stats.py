"""The driver's pipeline statistics (VK_KHR_pipeline_executable_properties): enabled where offered, read on request."""

from __future__ import annotations

import numpy as np
from fake_devices import offering

import vkml
from vkml.runtime.vulkan import pipeline_stats, reports


def test_a_device_offering_the_extension_gets_the_feature_and_extension_enabled():
    info = offering({"VK_KHR_pipeline_executable_properties"})
    enabled = reports.features_to_enable(info)
    assert pipeline_stats.FEATURE in enabled
    assert "VK_KHR_pipeline_executable_properties" in reports.extensions_to_enable(info, enabled)
    without = offering(set())
    assert pipeline_stats.FEATURE not in reports.features_to_enable(without)


def test_statistics_of_a_captured_pipeline_match_what_the_device_supports(gpu):
    gpu.pipelines.capture_statistics = True
    try:
        a = vkml.tensor(np.arange(7, dtype=np.float32), device=gpu)
        b = a * 3.0 + 0.2578125  # constants no other test uses: a kernel compiled here, with capture
        assert b.tolist() == (np.arange(7, dtype=np.float32) * 3.0 + 0.2578125).tolist()
        kernel = list(gpu.pipelines._by_object.values())[-1][1].kernel()  # the latest looked up
        found = pipeline_stats.executable_statistics(gpu.logical, gpu.pipelines.lookup(kernel).pipeline.handle)
    finally:
        gpu.pipelines.capture_statistics = False
    if pipeline_stats.supported(gpu.logical):  # the H200: register counts and the like
        assert found and all(e["statistics"] for e in found), found
    else:  # lavapipe 22.3 does not offer the extension
        assert found == []


def test_profile_dispatches_prints_statistics_or_says_why_not(gpu, capsys):
    import profile_dispatches

    profile_dispatches.WARM_UP_S = 0.0
    assert profile_dispatches.main(["--quick", "--stats", "--device", gpu.name, "add"]) == 0
    out = capsys.readouterr().out
    assert "## add" in out
    if pipeline_stats.supported(gpu.logical):
        assert "| kernel | executable | subgroup | statistics |" in out
    else:
        assert "does not report pipeline statistics" in out


def test_statistics_are_read_by_the_two_call_enumeration(gpu, monkeypatch):
    """The reading logic, on lavapipe too: a stand-in driver answers the two calls as the Vulkan spec says."""
    ffi = gpu.logical.ffi
    listed = {"vkGetPipelineExecutablePropertiesKHR": [("CS", 32)], "vkGetPipelineExecutableStatisticsKHR": []}
    stats = [("Register Count", 1, 40), ("Binary Size", 2, 17664)]  # (name, format: i64=1 / u64=2, value)

    def driver(name):
        def call(device, about, count, items):
            rows = listed[name] if name.endswith("PropertiesKHR") else stats
            if items == ffi.NULL:
                count[0] = len(rows)
                return 0
            for item, row in zip(items, rows):
                assert item.sType != 0  # the caller set every struct's type first
                if name.endswith("PropertiesKHR"):
                    item.name, item.subgroupSize = row[0].encode(), row[1]
                else:
                    item.name, item.format = row[0].encode(), row[1]
                    setattr(item.value, ("b32", "i64", "u64")[row[1]], row[2])
            return 0

        return call

    monkeypatch.setattr(pipeline_stats, "supported", lambda logical: True)
    monkeypatch.setattr(pipeline_stats, "_device_function", lambda logical, name: driver(name))
    found = pipeline_stats.executable_statistics(gpu.logical, ffi.NULL)
    assert found == [
        {"executable": "CS", "subgroup_size": 32, "statistics": {"Register Count": 40, "Binary Size": 17664}}
    ]

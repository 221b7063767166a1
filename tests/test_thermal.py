"""Thermal, power and clock lines of real reports, through the whole pipeline: the incident they make (or do not),
its category and its next action. Real lines, hosts replaced; the catalog's own examples test each signature."""

from __future__ import annotations

import orjson
import pytest

from correlate.correlator import correlate
from ingest.decode import Decoded, Segment

T0 = 1_800_000_000_000_000


def run(pipeline, text: str, host="node07"):
    seg = Segment(data=text.encode(), origin=f"t:{host}", stream=host, host=host, ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    return b.events.to_pylist(), correlate(b.events, b.link_samples, b.topology, now_us=T0)


def raised(incs):
    return [i for i in incs if i["severity"] in ("warning", "error", "critical")]


# mbusb/multibootusb#164: a kernel that logs the CPU's thermal interrupt as a machine check
CPU_THERMAL = """[13798.091040] CPU2: Core temperature/speed normal
[13798.091043] mce: [Hardware Error]: Machine check events logged
[14334.860099] CPU3: Core temperature above threshold, cpu clock throttled (total events = 57536)
[14334.860100] CPU2: Core temperature above threshold, cpu clock throttled (total events = 57536)
[14334.860117] mce: [Hardware Error]: Machine check events logged
[14334.861151] CPU3: Core temperature/speed normal
[14334.861152] CPU2: Core temperature/speed normal
[14334.861156] mce: [Hardware Error]: Machine check events logged"""


def test_a_throttled_cpu_names_the_incident_the_machine_checks_beside_it_do_not(pipeline):
    """The machine-check lines around a CPU's thermal throttle are that throttle logged: the incident is the
    host's cooling (thermal_power), not corrected memory errors of a DIMM (host_memory, before: the throttle lines
    gave no event and the mce line named the incident)."""
    _, incs = run(pipeline, CPU_THERMAL)
    (inc,) = raised(incs)
    assert (inc["category"], inc["severity"]) == ("thermal_power", "warning")
    assert inc["initiator"]["fault"] == "host.cpu_thermal_throttle" and inc["initiator"]["device"] is None
    assert "cooling" in inc["next_action"] and "DIMM" not in inc["next_action"]


def test_a_throttle_that_ended_or_a_cpu_at_its_power_limit_raises_nothing(pipeline):
    """collectd/collectd#2397's Xeon: power limit notifications and their end; a throttle's end alone."""
    text = "\n".join(["[332835.628811] CPU0: Core power limit notification (total events = 1)",
                      "[332835.628991] CPU0: Package power limit notification (total events = 1)",
                      "[332837.132346] CPU0: Core power limit normal",
                      "[  +0.002985] CPU1: Core temperature/speed normal"])
    evs, incs = run(pipeline, text)
    assert evs == [] and raised(incs) == []


# stas00/ml-engineering (compute/accelerator/nvidia/debug.md): "dcgmi diag -r 2" on a faulty node, its Warning row
# wrapped over six rows
DIAG = """| GPU Memory                | Pass - GPUs: 1, 2, 3, 4, 5, 6, 7               |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 Thermal violations totaling 13.3 second  |
|                           | s started at 9.7 seconds into the test for GP  |
|                           | U 0 Verify that the cooling on this machine i  |
|                           | s functional, including external, thermal mat  |
|                           | erial interface, fans, and any other componen  |
|                           | ts."""


def test_a_diagnostic_s_thermal_warning_row_joins_the_failed_gpu_s_incident(pipeline):
    """The wrapped Warning row is read (it was not: the incident held the Fail row alone, its "read the Warning
    rows" pointing at a row nothing read) and is the same GPU's: one incident of GPU 0 holding both."""
    evs, incs = run(pipeline, DIAG)
    thermal = [e for e in evs if e["signature"] == "dcgm.diag_thermal_violation"]
    assert [(e["gpu_index"], e["severity"], orjson.loads(e["details"])["violation_whole_s"]) for e in thermal] == [
        (0, "warning", "13")]
    (inc,) = raised(incs)
    assert inc["initiator"]["gpu_index"] == 0
    held = set(inc["initiator"]["events"]) | {x for d in inc["downstream"] for x in d["events"]}
    assert thermal[0]["event_id"] in held


def test_a_thermal_violation_under_a_second_is_information(pipeline):
    """NVIDIA/DCGM#242: DCGM warns on violations "totaling 0.0 seconds"; no incident of its own."""
    evs, incs = run(pipeline, "GPU 3 Thermal violations totaling 0.0 seconds started at 30.0 seconds into the test "
                              "for GPU 3")
    assert [(e["signature"], e["severity"]) for e in evs] == [("dcgm.diag_thermal_violation", "info")]
    assert raised(incs) == []


EXPORTER = ('DCGM_EXP_CLOCK_EVENTS_COUNT{{gpu="0",UUID="GPU-b9f9e81b-bee7-34bc-af17-132ef6592740",device="nvidia0",'
            'modelName="NVIDIA T400 4GB",Hostname="node07",DCGM_FI_DRIVER_VERSION="545.29.02",clock_event="{reason}",'
            'window_size_in_ms="300000"}} {n}')


def test_the_exporter_s_count_of_a_thermal_or_brake_reason_is_the_gpu_held_down(pipeline):
    """NVIDIA/dcgm-exporter#261's sample: hw_thermal counted once in the window is GPU 0's thermal_power warning,
    the power brake's action says the server, not the GPU."""
    _, incs = run(pipeline, EXPORTER.format(reason="hw_thermal", n=1))
    (inc,) = raised(incs)
    assert (inc["category"], inc["severity"], inc["initiator"]["gpu_index"]) == ("thermal_power", "warning", 0)
    assert "cooling" in inc["next_action"]
    _, incs = run(pipeline, EXPORTER.format(reason="hw_power_brake", n=3))
    (inc,) = raised(incs)
    assert "BMC" in inc["next_action"] and "not at fault" in inc["next_action"]


def test_the_exporter_s_idle_power_cap_and_zero_counts_raise_nothing(pipeline):
    text = "\n".join([EXPORTER.format(reason="gpu_idle", n=2), EXPORTER.format(reason="sw_power_cap", n=40),
                      EXPORTER.format(reason="hw_thermal", n=0)])
    evs, incs = run(pipeline, text)
    assert evs == [] and raised(incs) == []


# NVIDIA/NVSentinel#1371: the node condition its GpuThermalMarginWatch raised
NVSENTINEL = """{Type:GpuThermalMarginWatch
 Status:True
 Reason:GpuThermalMarginWatchIsNotHealthy
 Message:ErrorCode:GPU_TEMP_HW_SLOWDOWN_VIOLATION GPU:0 PCI:0000:00:00.0 GPU_UUID:GPU-00000000-0000-0000-0000-000000000000 GPU 0 thermal margin 59°C below HW slowdown T.Limit (slowdown=200°C) Recommended Action=CONTACT_SUPPORT;}"""  # noqa: E501


def test_nvsentinel_s_thermal_margin_violation_is_the_gpu_s_cooling_not_a_gpu_to_replace(pipeline):
    """NVSentinel cordons for it (CONTACT_SUPPORT); it read as nothing. The GPU of its bus id, a thermal_power
    warning whose action is the cooling; the power brake's says the server."""
    _, incs = run(pipeline, NVSENTINEL)
    (inc,) = raised(incs)
    assert (inc["category"], inc["severity"], inc["initiator"]["device"]) == ("thermal_power", "warning",
                                                                              "0000:00:00.0")
    assert "cooling" in inc["next_action"] and "replace" in inc["next_action"]
    brake = ("ErrorCode:GPU_HW_POWER_BRAKE_VIOLATION GPU:2 PCI:0000:1b:00.0 GPU 2 hardware power brake asserted for 3 "
             "consecutive poll(s) (clocks event reasons mask 0x8c)")
    _, incs = run(pipeline, brake)
    (inc,) = raised(incs)
    assert inc["initiator"]["device"] == "0000:1b:00.0" and "BMC" in inc["next_action"]


def test_a_host_s_thermal_shutdown_is_one_critical_incident_of_its_cooling(pipeline):
    """pyavitz/debian-image-builder#98: the thermal core's critical trip and the power-off it orders read as
    nothing; one critical thermal_power incident of the host (no device), its action the cooling, not the GPUs.
    A thermal zone's registration at boot is none."""
    text = "\n".join(["Feb 10 17:37:44 node07 kernel: thermal thermal_zone0: gpu-thermal: critical temperature reached, "
                      "shutting down",
                      "Feb 10 17:37:44 node07 kernel: reboot: HARDWARE PROTECTION shutdown (Temperature too high)"])
    evs, incs = run(pipeline, text)
    assert [e["signature"] for e in evs] == ["host.thermal_shutdown"] * 2
    (inc,) = raised(incs)
    assert (inc["category"], inc["severity"], inc["initiator"]["device"]) == ("thermal_power", "critical", None)
    assert "cooling" in inc["next_action"] and "not its GPUs" in inc["next_action"]
    evs, _ = run(pipeline, "[    1.234567] thermal LNXTHERM:00: registered as thermal_zone0")
    assert evs == []


def run_many(pipeline, parts: list[tuple[str, str, int]]):
    """``parts``: (host, text, the segment's reference time in µs: its file's time for lines that print none)."""
    segs = [Segment(data=t.encode(), origin=f"t:{h}:{i}", stream=h, host=h, ref_ts=ts, ref_basis="file", ingest_ts=ts)
            for i, (h, t, ts) in enumerate(parts)]
    b = pipeline.run(Decoded(segments=segs))
    return correlate(b.events, b.link_samples, b.topology, now_us=T0)


# illinois-scicomp/machine-shop-maintenance#80's Xid 79 lines, dated; a FreeIPMI SEL row of a failed PSU
# (thomas-krenn/check_ipmi_sensor_v3#66) captured five minutes later, its event timed by that capture
XID79 = """[Tue Apr 15 16:50:03 2025] NVRM: GPU at PCI:0000:02:00: GPU-be29ae39-c771-a3b8-e7c3-83562ff86bbe
[Tue Apr 15 16:50:03 2025] NVRM: Xid (PCI:0000:02:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."""
PSU = ("4    | Apr-15-2025 | 16:50:01 | Power Supply 2 PS2 Status                         | Power Supply      | "
       "Critical | Power Supply Failure detected")
XID_TS = 1_744_735_803_000_000  # 2025-04-15T16:50:03Z


def test_a_power_supply_failure_of_the_host_explains_its_gpu_falling_off_the_bus(pipeline):
    """A PSU failure in the BMC's log and the Xid 79 of a GPU of that host were two incidents, the GPU's saying
    "reseat or replace": one incident now, the host's power its initiator and the GPU downstream by the rule."""
    incs = run_many(pipeline, [("node07", XID79, XID_TS), ("node07", PSU, XID_TS + 300 * 1_000_000)])
    (inc,) = raised(incs)
    assert inc["initiator"]["fault"] == "host.bmc_power_fault" and inc["category"] == "thermal_power"
    assert [d["device"] for d in inc["downstream"]] == ["0000:02:00.0"]
    assert "power.host_power_fault_explains_gpu_fall" in {x["rule"] for x in inc["evidence"]}


# the iDRAC's SEL as Redfish serves it (bb-Ricardo/check_redfish#4), newest record first: PSU redundancy lost at
# 04:04:14 -06:00 (10:04:14Z), the input restored at 04:28 after it; the Xid 79 lines above dated 26 s after the loss
REDFISH_SEL = (
    '{"Members":[{"@odata.id":"/redfish/v1/Managers/iDRAC.Embedded.1/Logs/Sel/27","Created":"2018-12-19T04:28:32-06:00",'
    '"Description":" Log Entry 27","EntryCode":"Deassert","EntryType":"SEL","Id":"27","Links":{},"Message":"The input '
    'power for power supply 1 has been restored.","SensorType":"Power Supply / Converter","Severity":"OK"},'
    '{"@odata.id":"/redfish/v1/Managers/iDRAC.Embedded.1/Logs/Sel/26","Created":"2018-12-19T04:04:14-06:00",'
    '"Description":" Log Entry 26","EntryCode":"Redundancy Lost","EntryType":"SEL","Id":"26","Links":{},"Message":'
    '"Power supply redundancy is lost.","SensorType":"Power Supply / Converter","Severity":"Critical"}]}')
REDFISH_XID79 = XID79.replace("Tue Apr 15 16:50:03 2025", "Wed Dec 19 10:04:40 2018")
REDFISH_XID_TS = 1_545_213_880_000_000  # 2018-12-19T10:04:40Z


def test_a_redfish_power_supply_record_explains_the_gpu_falling_off_the_bus(pipeline):
    """The same BMC log read through Redfish (iDRAC) gave no event at all, and the Xid 79 after it said "reseat or
    replace the GPU": the PSU redundancy loss is the initiator now, at the record's own time (its "Created", not the
    dump's a day later), and the GPU is downstream by the host-power rule."""
    incs = run_many(pipeline, [("node07", REDFISH_XID79, REDFISH_XID_TS),
                               ("node07", REDFISH_SEL, REDFISH_XID_TS + 86400 * 1_000_000)])
    (inc,) = raised(incs)
    assert inc["initiator"]["fault"] == "host.redfish_psu_redundancy_lost" and inc["category"] == "thermal_power"
    assert inc["start"] == "2018-12-19T10:04:14.000000Z"
    assert [d["device"] for d in inc["downstream"]] == ["0000:02:00.0"]
    assert "power.host_power_fault_explains_gpu_fall" in {x["rule"] for x in inc["evidence"]}


def test_a_redfish_record_of_supplies_back_to_redundant_raises_nothing(pipeline):
    """The records that say the fault ended ("restored", "The power supplies are redundant.") are no event."""
    ok = REDFISH_SEL.split(',{"@odata.id":"/redfish/v1/Managers/iDRAC.Embedded.1/Logs/Sel/26"')[0] + "]}"
    assert raised(run_many(pipeline, [("node07", ok, REDFISH_XID_TS)])) == []


def test_another_host_s_power_fault_does_not_explain_a_gpu_fall(pipeline):
    incs = run_many(pipeline, [("node07", XID79, XID_TS), ("node08", PSU, XID_TS + 60 * 1_000_000)])
    fall = [i for i in incs if i["initiator"]["host"] == "node07"]
    assert [i["category"] for i in fall] == ["gpu_off_bus"] and fall[0]["downstream"] == []


def test_the_power_fault_is_placed_at_the_bmc_s_time_not_the_dump_s(pipeline):
    """The row prints the BMC's date and time: a SEL dumped two days after the fall still explains it, and a row of
    a PSU that failed months before (a PSU not plugged in at setup, thomas-krenn/check_ipmi_sensor_v3#33) does not
    explain today's Xid 79 however soon after it the log was dumped (by the dump's time, an upper bound, it did)."""
    later = XID_TS + 2 * 86400 * 1_000_000
    incs = run_many(pipeline, [("node07", XID79, XID_TS), ("node07", PSU, later)])
    (inc,) = raised(incs)
    assert inc["start"] == "2025-04-15T16:50:01.000000Z" and len(inc["downstream"]) == 1
    old = PSU.replace("Apr-15-2025 | 16:50:01", "Jan-10-2025 | 09:12:44")
    incs = run_many(pipeline, [("node07", XID79, XID_TS), ("node07", old, XID_TS + 300 * 1_000_000)])
    assert sorted(i["category"] for i in raised(incs)) == ["gpu_off_bus", "thermal_power"]
    assert all(i["downstream"] == [] for i in incs)


@pytest.mark.parametrize("row", [
    # ipmitool sel list's row logged before the BMC's clock was set, and FreeIPMI's (thomas-krenn/check_ipmi_sensor_v3
    # #33: a PSU not plugged in at setup)
    "   1 | Pre-Init |0000000000| Power Supply PS1 | Failure detected | Asserted",
    "1    | PostInit    | PostInit | Power Supply 2 PS2 Status | Power Supply | Critical | Power Supply Failure detected",
])
def test_a_power_fault_row_of_no_time_of_its_own_explains_no_gpu_fall(pipeline, row):
    """A "Pre-Init" row was logged before the BMC knew the time (the host's power-on, maybe the day it was racked);
    it takes its dump's time. A SEL dumped a minute after an Xid 79 made it the initiator and the GPU downstream,
    "check the PSU"; the GPU's own fault stays the initiator (power.host_power_fault_explains_gpu_fall needs the
    row's own time)."""
    incs = run_many(pipeline, [("node07", XID79, XID_TS), ("node07", row, XID_TS + 60 * 1_000_000)])
    (inc,) = raised(incs)
    assert (inc["category"], inc["initiator"]["xid"], inc["initiator"]["device"]) == ("gpu_off_bus", 79, "0000:02:00.0")
    assert "power.host_power_fault_explains_gpu_fall" not in {x["rule"] for i in incs for x in i["evidence"]}

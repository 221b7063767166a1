"""Every time/host prefix shape from a real line (shared/reference/formats.md §1, §7, §11.1, §12.1)."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.prefix import LAYERS, can_begin, parse_iso_us, parse_prefix, to_us

REF = to_us(datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc))


def us(*a, tz=timezone.utc):
    return to_us(datetime(*a, tzinfo=tz))


@pytest.mark.parametrize("line,ts,prec,host,rest_start", [
    # raw dmesg: seconds since boot, no wall time
    ("[449410.332316] NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>'", None, 1, None, "NVRM: Xid"),
    # dmesg -T, two spaces and one space before the day
    ("[Fri Mar  3 04:44:24 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=1", us(2023, 3, 3, 4, 44, 24), 1_000_000, None,
     "NVRM"),
    ("[Mon Feb 2 22:52:45 2026] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Data {}", us(2026, 2, 2, 22, 52, 45),
     1_000_000, None, "nvidia-nvswitch1"),
    # dmesg -T in another locale (util-linux's strftime(_("%a %b %e %H:%M:%S %Y")) after setlocale: the locale's
    # names, and a translation may put the day first): the time was not read (a break-it pass)
    ("[Sa Dez  5 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79", us(2026, 12, 5, 10, 0, 0), 1_000_000, None, "NVRM"),
    ("[sam. déc.  5 10:00:00 2026] NVRM: Xid", us(2026, 12, 5, 10, 0, 0), 1_000_000, None, "NVRM"),
    ("[土 12月  5 10:00:00 2026] NVRM: Xid", us(2026, 12, 5, 10, 0, 0), 1_000_000, None, "NVRM"),
    ("[Сб дек  5 10:00:00 2026] NVRM: Xid", us(2026, 12, 5, 10, 0, 0), 1_000_000, None, "NVRM"),
    # ja_JP, ko_KR and zh_TW pad the month's number with a blank (glibc localedata abmon " 3月"): not read Jan – Sep
    ("[木  3月 16 14:01:28 2023] NVRM: Xid", us(2023, 3, 16, 14, 1, 28), 1_000_000, None, "NVRM"),
    ("[목  3월 16 14:01:28 2023] NVRM: Xid", us(2023, 3, 16, 14, 1, 28), 1_000_000, None, "NVRM"),
    ("[四  3月  6 14:01:28 2023] NVRM: Xid", us(2023, 3, 6, 14, 1, 28), 1_000_000, None, "NVRM"),
    ("[Sa  5. Dez 10:00:00 2026] NVRM: Xid", us(2026, 12, 5, 10, 0, 0), 1_000_000, None, "NVRM"),
    ("[INFO main  5 10:00:00 2026] NVRM: Xid", None, 1, None, "[INFO main"),  # no month: no stamp
    # ... as util-linux 2.38.1's dmesg -T prints them (LC_ALL=<locale>.UTF-8, glibc 2.36's locales): cs_CZ and de_DE
    # translate the stamp with the year before the time (po/cs.po "%a %e. %b %Y %H:%M:%S", po/de.po
    # "%a, %e. %b %Y, %H:%M:%S"); tr_TR and uk_UA print glibc's abmon, "Ara" and "гру" for December
    ("[Po  7. pro 2026 05:52:27] Linux version 6.18.44", us(2026, 12, 7, 5, 52, 27), 1_000_000, None, "Linux"),
    ("[Mo,  7. Dez 2026, 05:52:27] Linux version 6.18.44", us(2026, 12, 7, 5, 52, 27), 1_000_000, None, "Linux"),
    ("[Pzt Ara  7 05:52:27 2026] Linux version 6.18.44", us(2026, 12, 7, 5, 52, 27), 1_000_000, None, "Linux"),
    ("[пн гру  7 05:52:27 2026] Linux version 6.18.44", us(2026, 12, 7, 5, 52, 27), 1_000_000, None, "Linux"),
    ("[Čt 19. úno 2026 03:12:44] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
     us(2026, 2, 19, 3, 12, 44), 1_000_000, None, "NVRM"),
    ("[Çrş Ağu 19 03:12:44 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
     us(2026, 8, 19, 3, 12, 44), 1_000_000, None, "NVRM"),
    # dmesg --time-format iso (comma)
    ("2025-05-27T04:18:56,089671+00:00 NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus",
     us(2025, 5, 27, 4, 18, 56) + 89671, 1, None, "NVRM"),
    # RFC 3164 with host and tag, kernel stamp inside
    ("Sep 19 16:18:04 node07 kernel: [68185.875052] pcieport 0000:00:03.1: AER: Multiple Correctable error",
     us(2026, 9, 19, 16, 18, 4), 1_000_000, "node07", "pcieport"),
    # RFC 3164 with a localised month (journalctl honours the locale)
    ("11月 15 14:15:47 node01 nv-fabricmanager[4177]: request to query NVSwitch device information",
     us(2026, 11, 15, 14, 15, 47), 1_000_000, "node01", "request"),
    ("фев 12 00:48:02 node02 kernel: NVRM: Xid", us(2026, 2, 12, 0, 48, 2), 1_000_000, "node02", "NVRM"),
    # glibc's abbreviated months of more locales (pl_PL, with a letter beyond ASCII; es_ES; pt_BR)
    ("kwi 15 07:56:59 testowy kernel: NVRM: Xid (PCI:0000:07:00): 38, x", us(2026, 4, 15, 7, 56, 59), 1_000_000,
     "testowy", "NVRM"),
    ("paź 3 07:56:59 node02 kernel: NVRM: Xid", us(2026, 10, 3, 7, 56, 59), 1_000_000, "node02", "NVRM"),
    ("dic 3 07:56:59 node02 kernel: NVRM: Xid", us(2025, 12, 3, 7, 56, 59), 1_000_000, "node02", "NVRM"),
    ("out 3 07:56:59 node02 kernel: NVRM: Xid", us(2026, 10, 3, 7, 56, 59), 1_000_000, "node02", "NVRM"),
    # a month's whole name, in a locale's lower case (NVIDIA/open-gpu-kernel-modules#1010) or a paste's English
    ("april 24 16:22:15 robin kernel: NVRM: Xid (PCI:0000:01:00): 79, x", us(2026, 4, 24, 16, 22, 15), 1_000_000,
     "robin", "NVRM"),
    ("September 3 07:56:59 node02 kernel: NVRM: Xid", us(2026, 9, 3, 7, 56, 59), 1_000_000, "node02", "NVRM"),
    ("juni 3 07:56:59 node02 kernel: NVRM: Xid", us(2026, 6, 3, 7, 56, 59), 1_000_000, "node02", "NVRM"),
    ("des. 3 07:56:59 node02 kernel: NVRM: Xid", us(2025, 12, 3, 7, 56, 59), 1_000_000, "node02", "NVRM"),
    # journalctl --no-hostname: the word before the colon is the kernel's tag (or a tag with its pid), no host
    ("Mar 21 21:42:01 kernel: NVRM: GPU0 _kgspIsHeartbeatTimedOut: x", us(2026, 3, 21, 21, 42, 1), 1_000_000, None,
     "NVRM: GPU0"),
    ("Mar 21 21:42:01 nv-fabricmanager[88]: request to query", us(2026, 3, 21, 21, 42, 1), 1_000_000, None,
     "request"),
    # a line pasted without its host and tag (NVIDIA/open-gpu-kernel-modules#1146): the driver's word begins the message
    ("Sep 18 20:07:01 NVRM: Xid (PCI:0000:02:00): 109, pid=8494,   name=RenderThread", us(2026, 9, 18, 20, 7, 1),
     1_000_000, None, "NVRM: Xid"),
    ("Sep 18 20:07:01 nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal", us(2026, 9, 18, 20, 7, 1), 1_000_000,
     None, "nvidia-nvswitch3: SXid"),
    ("Sep 18 20:07:01 nvidia-modeset: ERROR: GPU:0: Idling display engine timed out", us(2026, 9, 18, 20, 7, 1),
     1_000_000, None, "nvidia-modeset: ERROR"),
    # a CloudWatch Logs table export: the service's stamp between bars, then the line (aws/aws-ofi-nccl#889, #715)
    ("  | 2025-05-16T16:39:55.218-07:00 | node01:86:2554 [0] nccl_net_ofi_init:155 NCCL WARN NET/OFI Initializing",
     us(2025, 5, 16, 23, 39, 55) + 218000, 1000, "node01", "node01:86:2554"),
    ("| 2024-11-28T07:42:11.527Z | algo-1:1:2 [0] NCCL INFO x", us(2024, 11, 28, 7, 42, 11) + 527000, 1000, "algo-1",
     "algo-1:1:2"),
    # ... with the line's own header after it: its host (a fleet's /var/log/messages in one export), the service's
    # zoned stamp for the time, also over a zoneless stamp of the line's own (a break-it pass)
    ("  | 2025-05-16T23:40:05Z | May 16 23:40:05 node08 kernel: NVRM: Xid (PCI:0000:5e:00): 79",
     us(2025, 5, 16, 23, 40, 5), 1_000_000, "node08", "NVRM: Xid"),
    ("| 2025-05-16T16:39:55.218-07:00 | libfabric:451707:1708520807::efa:cq:x", us(2025, 5, 16, 23, 39, 55) + 218000,
     1000, None, ":efa:cq:x"),
    # ... behind grep's file name
    ("logs/node07.log:  | 2025-05-16T16:39:55.218-07:00 | node07:1:2 [0] NCCL WARN x",
     us(2025, 5, 16, 23, 39, 55) + 218000, 1000, "node07", "node07:1:2"),
    # libfabric's own prefix: pid and epoch seconds (aws/aws-ofi-nccl#346)
    ("libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5", us(2024, 2, 21, 13, 6, 47),
     1_000_000, None, ":efa:cq:"),
    # a paste indented before its stamp (a Markdown code block)
    ("     Mar 21 21:42:01 kernel: NVRM: GPU0 x", us(2026, 3, 21, 21, 42, 1), 1_000_000, None, "NVRM: GPU0"),
    ("  2024-01-01T00:00:00Z node01 kernel: NVRM: x", us(2024, 1, 1, 0, 0, 0), 1_000_000, "node01", "NVRM"),
    # an indented row with no stamp keeps its blanks (nvidia-smi -q's rows are matched by them)
    ("\tLink 0: 25 GB/s", None, 1, None, "\tLink 0"),
    # a shipper that dropped the tag
    ("Jul 20 16:15:36 node01:  Detected NVL5+ system", us(2026, 7, 20, 16, 15, 36), 1_000_000, "node01", " Detected"),
    # RFC 5424
    ("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - BOM'su root' failed",
     us(2003, 10, 11, 22, 14, 15) + 3000, 1000, "mymachine.example.com", "'su root'"),
    # NCCL >= 2.26 WARN stamp
    ("[2025-09-17 15:16:23] node01:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got async",
     us(2025, 9, 17, 15, 16, 23), 1_000_000, "node01", "node01:311"),
    # ... after a word in the bracket: Taskcluster's task log (mozilla/translations#1167, a real-logs pass)
    ("[task 2025-07-01T05:06:30.004+00:00] [train] [nvidia-smi(stdout)] Failed to initialize NVML: Driver/library",
     us(2025, 7, 1, 5, 6, 30) + 4000, 1000, None, "[train]"),
    # grep over several files prefixes the file name
    ("node01.log:[2025-09-17 15:16:23] node01:311:405 [0] NCCL WARN x", us(2025, 9, 17, 15, 16, 23), 1_000_000,
     "node01", "node01:311"),
    # c10: month not zero-padded, nanoseconds, no year
    ("[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught",
     us(2026, 6, 26, 6, 24, 44) + 903881, 1, None, "[Rank 1]"),
    ("[rank0]:[E1206 18:44:16.994932383 ProcessGroupNCCL.cpp:1709] [PG 1 Rank 0] Timeout",
     us(2025, 12, 6, 18, 44, 16) + 994932, 1, None, "[PG 1"),
    # glog's thread id and a path inside c10's brackets (a fresh user's trial: the time was not read)
    ("[rank8]:[E1201 03:20:02.120267 41200 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:607] [Rank 8] Watchdog",
     us(2026, 12, 1, 3, 20, 2) + 120267, 1, None, "[Rank 8]"),
    # older c10: no time at all
    ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught", None, 1, None, "[Rank 1]"),
    # glog
    ("I1025 02:19:08.002792       1 health.go:151] Skipping non-nvmlEventTypeXidCriticalError event",
     us(2026, 10, 25, 2, 19, 8) + 2792, 1, None, "Skipping"),
    # PyTorch's Python logging (torch._logging) in glog's form, a path for the file, c10's rank prefix before it
    # (a public job log: "[rank0]:E0515 22:06:12.551000 34254 site-packages/torch/_subclasses/fake_tensor.py:2759]")
    ("[rank0]:E0515 22:06:12.551000 34254 site-packages/torch/_subclasses/fake_tensor.py:2759] [4/0] failed while",
     us(2026, 5, 15, 22, 6, 12) + 551000, 1, None, "[4/0]"),
    ("E1204 03:22:07.756204 48210 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught",
     us(2025, 12, 4, 3, 22, 7) + 756204, 1, None, "[Rank 0]"),
    # Talos (talosctl -n <node>): the node's address is the host (vllm-project/vllm#40652), facility/level, RFC 3339
    # with nanoseconds; a host label before the facility is read as well (it hid the stamp)
    ("192.0.2.119: kern:     err: [2026-04-22T21:25:20.466440686Z]: nvidia-nvswitch1: SXid (PCI:0000:aa:00.0)",
     us(2026, 4, 22, 21, 25, 20) + 466440, 1, "192.0.2.119", "nvidia-nvswitch1"),
    ("node07: kern: warning: [2026-04-22T21:26:20.599716692Z]: NVRM: Xid (PCI:0000:48:00): 74, pid=1",
     us(2026, 4, 22, 21, 26, 20) + 599716, 1, "node07", "NVRM: Xid"),
    ("192.0.2.119: node07: kern: warning: [2026-04-22T21:26:20.599716692Z]: NVRM: Xid (PCI:0000:48:00): 74, pid=1",
     us(2026, 4, 22, 21, 26, 20) + 599716, 1, "node07", "NVRM: Xid"),  # a relay's address, then the node's label
    *[(f"{a}: kern: warning: [2026-04-22T21:26:20.599716692Z]: NVRM: Xid (PCI:0000:48:00): 74, pid=1",
       us(2026, 4, 22, 21, 26, 20) + 599716, 1, None, "NVRM: Xid")  # no address: no host (a break-it pass)
      for a in ("999.999.999.999", "0.0.0.0", "aa:bb:cc:dd:ee:ff")],
    # its stamp mangled to the minute: read to the minute (its file was skipped whole, a TypeError; the catalog's
    # property test met such a line)
    ("node07: kern: warning: [2026-04-22T21:26 20.599716692Z]: NVRM: Xid (PCI:0000:48:00): 74, pid=1",
     us(2026, 4, 22, 21, 26), 60_000_000, "node07", "NVRM: Xid"),
    # Go log behind a source address
    ("10.0.0.1: 2025/11/25 13:58:49 nvidia-fabricmanager-wrapper: using NVSwitch management port",
     us(2025, 11, 25, 13, 58, 49), 1_000_000, "10.0.0.1", "nvidia-fabricmanager-wrapper"),
    # a relay's address before a syslog header that names the host: the header's host
    ("192.0.2.5: Sep 19 16:18:04 node07 kernel: NVRM: Xid (PCI:0000:48:00): 74", us(2026, 9, 19, 16, 18, 4),
     1_000_000, "node07", "NVRM: Xid"),
    # Fabric Manager's own log file
    ("[May 16 2025 15:10:21] [INFO] [tid 30042] GPU probe request received", us(2025, 5, 16, 15, 10, 21),
     1_000_000, None, "[INFO]"),
    # a bare journal tag, no time
    ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990", None, 1, None, "NVRM"),
    # journalctl -o short-full (weekday, date, zone name) and -o short-unix (epoch seconds): their lines were timed
    # by their file (a break-it pass); a zone abbreviation of one offset is that offset (EST, CET, JST: they were read in
    # the zone set, a second break-it pass), an ambiguous one (CST: US Central or China) in the zone set (here UTC),
    # an offset of hours alone (+09) as one with minutes (the header did not parse)
    ("Sun 2026-11-29 03:10:00 UTC a1 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.",
     us(2026, 11, 29, 3, 10, 0), 1_000_000, "a1", "NVRM"),
    ("Fri 2024-05-17 10:08:35 +0200 node01 nv-fabricmanager[4177]: Successfully configured", us(2024, 5, 17, 8, 8, 35),
     1_000_000, "node01", "Successfully"),
    ("Sun 2026-11-29 03:10:00 CET a1 kernel: NVRM: Xid 79", us(2026, 11, 29, 2, 10, 0), 1_000_000, "a1", "NVRM"),
    ("Tue 2026-12-01 03:12:05 EST node07 kernel: NVRM: Xid 79", us(2026, 12, 1, 8, 12, 5), 1_000_000, "node07", "NVRM"),
    ("Tue 2026-12-01 03:12:05 +09 node07 kernel: NVRM: Xid 79", us(2026, 11, 30, 18, 12, 5), 1_000_000, "node07",
     "NVRM"),
    ("Sun 2026-11-29 03:10:00 CST a1 kernel: NVRM: Xid 79", us(2026, 11, 29, 3, 10, 0), 1_000_000, "a1", "NVRM"),
    ("1795921800.250000 a1 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.",
     us(2026, 11, 29, 3, 10, 0) + 250000, 1, "a1", "NVRM"),
    # a number that starts a line is no journal stamp without journalctl's six digits and a tag (a break-it pass:
    # "step" became the host); an address where the host stands is the sender's, as in RFC 3164: the host (a Kafka key
    # or an envelope names it better: ``Prefix.addr_host``), IPv6 too; syslog's "-" (no value) names none
    ("1795921800.5 step 100: NCCL WARN x", None, 1, None, "1795921800.5 step"),
    ("1795921800.000000 10.0.0.5 kernel: NVRM: x", us(2026, 11, 29, 3, 10, 0), 1, "10.0.0.5", "NVRM"),
    ("Sun 2026-11-29 03:10:00 UTC 10.0.0.5 kernel: NVRM: x", us(2026, 11, 29, 3, 10, 0), 1_000_000, "10.0.0.5", "NVRM"),
    ("Sun 2026-11-29 03:10:00 UTC fe80::1 kernel: NVRM: x", us(2026, 11, 29, 3, 10, 0), 1_000_000, "fe80::1", "NVRM"),
    ("1795921800.000000 2001:db8::11 kernel: NVRM: x", us(2026, 11, 29, 3, 10, 0), 1, "2001:db8::11", "NVRM"),
    ("Nov 29 03:10:00 2001:db8::11 kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 0), 1_000_000, "2001:db8::11", "NVRM"),
    ("Nov 29 03:10:10 10.1.2.3 kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 10), 1_000_000, "10.1.2.3", "NVRM"),
    ("Nov 29 03:10:10 999.999.999.999 kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 10), 1_000_000, None, "NVRM"),
    ("2026-11-29T03:10:03Z fe80::1 kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 3), 1_000_000, "fe80::1", "NVRM"),
    ("2026-11-29T03:10:09Z - kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 9), 1_000_000, None, "NVRM"),
    # a scoped or IPv4-mapped IPv6 address (rsyslog on a dual-stack listener): all were one host "fe80" (a second
    # break-it pass)
    ("Nov 29 03:10:00 fe80::1%eth0 kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 0), 1_000_000, "fe80::1%eth0", "NVRM"),
    ("Nov 29 03:10:00 ::ffff:10.0.0.1 kernel: NVRM: Xid", us(2026, 11, 29, 3, 10, 0), 1_000_000, "::ffff:10.0.0.1",
     "NVRM"),
    # dmesg -x (--decode): facility and level before dmesg -T's, --time-format iso's or the raw stamp (formats.md §1.3)
    ("kern  :warn  : [Sun Nov 29 03:10:00 2026] NVRM: Xid (PCI:0000:18:00): 79", us(2026, 11, 29, 3, 10, 0),
     1_000_000, None, "NVRM"),
    ("kern  :warn  : 2026-11-29T03:10:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79", us(2026, 11, 29, 3, 10, 0), 1,
     None, "NVRM"),
    ("syslog:err   : [  123.456789] NVRM: Xid (PCI:0000:18:00): 79", None, 1, None, "NVRM"),
    # the zeroed blocks a crash leaves in a syslog file before the next line; a terminal's colour codes around the
    # stamp and the host (kubectl logs, a colouring journal viewer): they hid both (a break-it pass)
    ("\x00\x00\x00\x00<6>Nov 30 03:12:00 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79",
     us(2026, 11, 30, 3, 12, 0), 1_000_000, "node07", "NVRM"),
    # rsyslog's RSYSLOG_ForwardFormat (omfwd, omkafka): a priority before an RFC 3339 stamp, host and tag; the stamp,
    # host and tag were kept in the message and the line took its Kafka record's time (a break-it pass)
    ("<4>2026-12-05T10:00:00.123+05:45 node31 kernel: NVRM: Xid (PCI:0000:3b:00): 79",
     us(2026, 12, 5, 4, 15, 0) + 123_000, 1000, "node31", "NVRM"),
    ("<13>2026-11-30T03:12:00Z node32 nv-fabricmanager[77]: x", us(2026, 11, 30, 3, 12, 0), 1_000_000, "node32", "x"),
    ("\x1b[31m2026-11-30T03:12:00Z node09 kernel: NVRM: Xid (PCI:0000:3b:00): 79", us(2026, 11, 30, 3, 12, 0),
     1_000_000, "node09", "NVRM"),
    ("\x1b[2m2026-11-30T03:12:00.5Z\x1b[0m \x1b[1;34mnode09\x1b[0m kernel: NVRM: Xid 79",
     us(2026, 11, 30, 3, 12, 0) + 500000, 100_000, "node09", "NVRM"),
    # `tput sgr0` (a character set, then a reset), a window title, a NUL after the colour (a second break-it pass)
    ("\x1b(B\x1b[m[Mon Nov 30 10:00:00 2026] NVRM: Xid (PCI:0000:19:00): 79", us(2026, 11, 30, 10, 0, 0), 1_000_000,
     None, "NVRM"),
    ("\x1b]0;node01: journalctl\x07\x1b[32m\x00Nov 30 03:12:00 node01 kernel: NVRM: Xid 79", us(2026, 11, 30, 3, 12, 0),
     1_000_000, "node01", "NVRM"),
])
def test_prefix_shapes(line, ts, prec, host, rest_start):
    p = parse_prefix(line, ref_us=REF)
    assert p.ts == ts
    if ts is not None:
        assert p.precision_us == prec
    assert p.host == host
    assert p.rest.startswith(rest_start), p.rest


#: glibc 2.36's abmon (localedata/locales/cs_CZ, tr_TR), what ``%b`` prints, January to December
ABMON = {"cs_CZ": "led úno bře dub kvě čen čec srp zář říj lis pro",
         "tr_TR": "Oca Şub Mar Nis May Haz Tem Ağu Eyl Eki Kas Ara"}


@pytest.mark.parametrize("loc,month", [(loc, m) for loc in ABMON for m in range(1, 13)])
def test_dmesg_t_in_czech_and_turkish_reads_every_month(loc, month):
    """Each month of cs_CZ's and tr_TR's ``dmesg -T`` (util-linux's stamp as each prints it: cs translates it day
    first with the year before the time, tr does not translate it): the line's time, not its file's or record's."""
    mon = ABMON[loc].split()[month - 1]
    stamp = f"[Út {5:2d}. {mon} 2026 10:00:00]" if loc == "cs_CZ" else f"[Sal {mon} {5:2d} 10:00:00 2026]"
    p = parse_prefix(f"{stamp} NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.", ref_us=REF)
    assert (p.ts, p.rest[:4]) == (us(2026, month, 5, 10, 0, 0), "NVRM")


_C10_LINE = "[rank8]:[E1130 03:22:01.518432000 ProcessGroupNCCL.cpp:616] [Rank 8] Watchdog caught"


@pytest.mark.parametrize("line,ts,host,rank,rest_start", [
    # pdsh / clush: "host: " before each line of the host's output, here dmesg -T, raw dmesg, syslog, c10, NCCL
    ("node07: [Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", us(2026, 11, 30, 3, 12, 1),
     "node07", None, "NVRM"),
    ("node07: [ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", None, "node07", None, "NVRM"),
    ("gpu-a100-07.example.com: Nov 30 03:12:01 gpu-a100-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79",
     us(2026, 11, 30, 3, 12, 1), "gpu-a100-07", None, "NVRM"),
    ("node08: " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, "node08", 8, "[Rank 8]"),
    ("node08: [E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught", None, "node08", None, "[Rank 1]"),
    ("rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19488:21063 [4] NCCL INFO x", None,
     "rdma-gpu-train-worker-0", None, "rdma-gpu-train-worker-0:19488"),
    ("node08: 2026-11-30T03:12:01.5Z node08 kernel: NVRM: x", us(2026, 11, 30, 3, 12, 1) + 500000, "node08", None,
     "NVRM"),
    # Slurm srun --label: the task number, padded when the job has ten tasks or more
    ("8: " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    (" 12: " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    # torchrun --tee: role and local rank
    ("[default0]:" + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    # kubectl logs --prefix --timestamps: the pod and container before the stamp; the pod names no host (a node agent's
    # pod relays its node's kernel lines), NCCL's prefix does (a break-it pass: the stamp was lost)
    ("[pod/dcgm-exporter-x7/dcgm] 2026-11-30T03:12:01.5Z NVRM: Xid (PCI:0000:3b:00): 79, pid=0",
     us(2026, 11, 30, 3, 12, 1) + 500000, None, None, "NVRM"),
    ("[pod/trainer-0/pytorch] 2026-11-30T03:22:01.9Z " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 900000, None, 8,
     "[Rank 8]"),
    ("[pod/trainer-0/pytorch] node08:1234:1290 [3] NCCL WARN x", None, "node08", None, "node08:1234"),
    # c10's rank prefix before glog's form (torch._logging; a fresh user's trial), behind a pdsh label too
    ("node08: [rank8]:E1130 03:22:01.518432 48210 torch/distributed/c10d/x.py:607] [Rank 8] Watchdog caught",
     us(2026, 11, 30, 3, 22, 1) + 518432, "node08", 8, "[Rank 8]"),
    ("[trainer3]:node08:1234:1290 [3] NCCL WARN x", None, "node08", None, "node08:1234"),
    # PyTorch >= 2.2: a rank's Python exception lines (NVIDIA/nccl#1410); c10's own prefix has no blank after ':'
    ("[rank7]: torch.distributed.DistBackendError: NCCL error in: x", None, None, 7, "torch.distributed"),
    ("[rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered", None, None, 1, "RuntimeError"),
    ("node08: [rank7]: Cuda failure 1 'invalid argument'", None, "node08", 7, "Cuda failure"),
    # Ray: the worker before each line of its output (formats.md §1.8); it hid c10's stamp (a break-it pass)
    ("(RayWorkerWrapper pid=1019) " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    ("(RayWorkerWrapper pid=1019, ip=10.0.0.2) node08:1019:1290 [3] NCCL WARN x", None, "node08", None,
     "node08:1019"),
    # another node's worker: Ray names it by address, the line's host (vllm-project/vllm#13535); NCCL's name wins above
    ("(RayWorkerWrapper pid=270291, ip=10.175.94.190) " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432,
     "10.175.94.190", 8, "[Rank 8]"),
    ("(raylet, ip=10.0.0.2) [2026-11-30 03:22:01,518 E 4242 4242] x", None, "10.0.0.2", None, "[2026-11-30"),
    # an address that is none names no host (a break-it pass: "ip=cafe", "ip=::", leading zeros, 4,000 digits)
    *[(f"(RayWorkerWrapper pid=1, ip={ip}) " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]")
      for ip in ("cafe", "::", "10.0.0.02", "999.999.999.999", "1" * 4000)],
    ("(not a label) NVRM: x", None, None, None, "(not a label)"),
    ("(pid=1019) " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),  # older Ray
    # a named actor's index after a slash (areal-project/AReaL#3); a name with a slash and no pid or address is no label
    ("(model_worker/12 pid=43581, ip=10.208.16.54) " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432,
     "10.208.16.54", 8, "[Rank 8]"),
    ("(a/b) hello", None, None, None, "(a/b) hello"),
    # a clock without a date before c10's prefix (modelscope/ms-swift#7992): c10's stamp is the line's time; a clock
    # before no prefix stays in the message
    ("18:11:06.680 " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    ("18:11:06 [Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    ("18:11:06.680 RuntimeError: x", None, None, None, "18:11:06.680 RuntimeError"),
    # vLLM's logger behind Ray's worker label (vllm-project/vllm#3688) and vLLM's own worker label, which names the
    # worker's rank (vllm-project/vllm#14452); the stamp has no year
    ("(RayWorkerVllm pid=4028887) ERROR 11-28 21:38:23 ray_utils.py:44] torch.distributed.DistBackendError: NCCL "
     "error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled cuda error",
     us(2026, 11, 28, 21, 38, 23), None, None, "torch.distributed"),
    ("(VllmWorker rank=5 pid=948) ERROR 11-30 03:22:01 [multiproc_executor.py:597] RuntimeError: NCCL error",
     us(2026, 11, 30, 3, 22, 1), None, 5, "RuntimeError"),
    # a label with a pid or an address is one before anything: a remote worker's traceback line is its node's (a
    # break-it pass); a bare name only before a stamp or another prefix
    ("(RayWorkerVllm pid=4028887, ip=10.0.0.2) torch.distributed.DistBackendError: NCCL error in: x", None,
     "10.0.0.2", None, "torch.distributed"),
    ("(raylet, ip=10.0.0.2) Traceback (most recent call last):", None, "10.0.0.2", None, "Traceback"),
    ("(RayWorkerWrapper) NVRM: Xid", None, None, None, "NVRM: Xid"),
    ("(RayWorkerWrapper) hello", None, None, None, "(RayWorkerWrapper) hello"),
    # a Kubernetes CRI container log: stamp, stream and tag before c10's prefix, which gives the rank (a break-it
    # pass: the tag hid it)
    ("2026-11-30T03:22:01.900000000Z stderr F " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 900000, None, 8,
     "[Rank 8]"),
    # and a rank's exception after it, with PyTorch's "[rankN]: " before each line (a break-it pass: its GPU went
    # unnamed behind the CRI header)
    ("2026-11-29T03:10:00.123456789Z stderr F [rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
     us(2026, 11, 29, 3, 10, 0) + 123456, None, 1, "RuntimeError"),
    # Open MPI --tag-output: job and rank, stream
    ("[1,3]<stderr>:" + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    # and --timestamp-output before it, with a colon (NVIDIA/nccl#230): the stamp is the line's time, the label is
    # peeled, NCCL's own prefix names the host
    ("2019-06-02T16:13:44.884Z: [1,12]<stdout>:node57:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got "
     "async event : local catastrophic error", us(2019, 6, 2, 16, 13, 44) + 884000, "node57", None, "node57:815"),
    ("2019-06-02T16:13:44.884Z: [1,12]<stdout>:", us(2019, 6, 2, 16, 13, 44) + 884000, None, None, ""),
    # or as ctime(3) prints it, unbracketed and right before the label (NVIDIA/nccl#957: every line was timed by its
    # file); a ctime with no label after it is no stamp of Open MPI's
    ("Fri Aug 11 12:31:45 2023[1,0]<stdout>:tomte401:1850301:1881341 [0] transport.cc:154 NCCL WARN Cuda failure "
     "'invalid argument'", us(2023, 8, 11, 12, 31, 45), "tomte401", None, "tomte401:1850301"),
    ("Fri Aug 11 12:31:45 2023 node07: x", None, None, None, "Fri Aug"),
    # a log viewer's export puts a space before the offset; the stamp NCCL prints after it is not read (NVIDIA/nccl#1905:
    # the offset was dropped, every line 8 h late: a real-logs pass)
    ("2025-11-09 15:39:31.043 +08:00 [2025-11-09 07:39:30] h100-28:238:1313 [0] transport/net_ib.cc:139 NCCL WARN x",
     us(2025, 11, 9, 7, 39, 31) + 43000, "h100-28", None, "[2025-11-09 07:39:30] h100-28:238"),
    ("2025-11-09 15:39:31 -0500 h100-28:238:1313 [0] NCCL WARN x", us(2025, 11, 9, 20, 39, 31), "h100-28", None,
     "h100-28:238"),
    # a stamp without the colon is no launcher's: a word after it is the payload (a syslog-like host needs its tag)
    ("2019-06-02T16:13:44.884Z node07: NVRM: Xid", us(2019, 6, 2, 16, 13, 44) + 884000, None, None, "node07: NVRM"),
    # two labels (srun's task before torchrun's), a label after grep's file name, a blank after a bracket label
    ("0: [default0]:" + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    ("node01.log:node07: [Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), "node07", None, "NVRM"),
    # grep -rn: the file's path and the line's number (a break-it pass); the host the file's name names, when the line
    # names none of its own (a second break-it pass; not a folder's: a third), over rotated and compressed logs (zgrep)
    ("logs/node07/kern.log:5512:[Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    ("logs/node08/syslog.1:812:[Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    ("logs/node07/kern.log.2.gz:5512:[Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None,
     "NVRM"),
    ("logs/node07-dmesg.txt:12:[Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), "node07", None, "NVRM"),
    ("logs/node07.log:5:node03:1234:1290 [0] x.cc:1 NCCL WARN x", None, "node03", None, "node03:1234"),
    ("messages-20261129:77:[Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    # a bare log name before a syslog or ISO stamp: grep in /var/log (aws/aws-parallelcluster#1150: the line's host and
    # time were lost; a real-logs pass); dmesg -x's facility and level before anything else stays the line's
    ("messages:Nov 30 03:12:01 node07 kernel: NVRM: Xid", us(2026, 11, 30, 3, 12, 1), "node07", None, "NVRM"),
    ("messages-20261129:Nov 29 03:12:01 node08 kernel: NVRM: Xid", us(2026, 11, 29, 3, 12, 1), "node08", None,
     "NVRM"),
    ("syslog:2026-11-30T03:12:01.5Z node07 kernel: NVRM: Xid", us(2026, 11, 30, 3, 12, 1) + 500000, "node07", None,
     "NVRM"),
    ("node01.log:[Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), "node01", None, "NVRM"),
    ("/var/log/kern.log.1:77:node07: [Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), "node07", None,
     "NVRM"),
    ("[1,3]<stdout>: [Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    # a viewer's line number in brackets (hiyouga/LlamaFactory#7396: "[80746] [rank0]:[E321 …"); not a pid in brackets
    # before a payload, nor a dmesg stamp
    ("[80746] " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    ("[80746] [Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    ("[80746] Watchdog caught", None, None, None, "[80746] Watchdog"),
    # torchrun's --role rank --tee label before c10's own (pytorch/torchtitan#810: "[rank0]:[rank0]:[E128 …"): the
    # rank is c10's, the node's local rank 0 of the label is not; one rank prefix alone stays c10's
    ("[rank0]:" + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    ("[rank0]:[rank0]:[E128 13:23:00.788972321 ProcessGroupNCCL.cpp:1897] [PG ID 0 PG GUID 0(default_pg) Rank 0] x",
     us(2026, 1, 28, 13, 23, 0) + 788972, None, 0, "[PG ID 0"),
    # a runner's stream label (mila-iqia/milabench#269) and a terminal viewer's frame (vllm-project/vllm#6976)
    ("dinov2-giant-nodes.cn-d004 [stderr] " + _C10_LINE, us(2026, 11, 30, 3, 22, 1) + 518432, None, 8, "[Rank 8]"),
    ("node [stderr] hello", None, None, None, "node [stderr]"),
    # pdsh's label before a rank's Python exception (NVIDIA/nccl#520: DeepSpeed's multi-node runner), and NCCL's own
    # host name over a parallel shell's address label (huggingface/accelerate#1317)
    ("compute-dy-p4d24xlarge-77: RuntimeError: NCCL error in: x", None, "compute-dy-p4d24xlarge-77", None,
     "RuntimeError"),
    ("node07: torch.distributed.DistBackendError: NCCL error", None, "node07", None, "torch.distributed"),
    ("node07: Traceback (most recent call last):", None, "node07", None, "Traceback"),
    # a program's own numbered word before its exception is no host (a break-it pass: hosts rank0 and cuda0)
    ("rank0: torch.distributed.DistBackendError: NCCL error", None, None, None, "rank0: torch"),
    ("cuda0: RuntimeError: CUDA error: x", None, None, None, "cuda0: RuntimeError"),
    ("E1: Traceback (most recent call last):", None, None, None, "E1: Traceback"),
    ("104.171.201.171: lambda-scalar02:95750:95750 [0] NCCL INFO Bootstrap", None, "lambda-scalar02", None,
     "lambda-scalar02:95750"),
    ("│ [Mon Nov 30 03:12:01 2026] NVRM: Xid", us(2026, 11, 30, 3, 12, 1), None, None, "NVRM"),
    # pdsh 'journalctl -k -o cat | grep Xid': no stamp, the kernel's line right behind the host
    ("node12: NVRM: Xid (PCI:0000:18:00): 74, pid=2345", None, "node12", None, "NVRM"),
    ("gpu_node12: nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007", None, "gpu_node12", None, "nvidia-nvswitch1"),
    # a level or a program's tag before a stamp is no host: a host label has a digit (a break-it pass: "ERROR: "
    # named a host and joined two machines' Xids)
    ("ERROR: [2026-11-30 03:12:01] NVRM: Xid (PCI:0000:3b:00): 79", None, None, None, "ERROR"),
    ("WARNING: [Mon Nov 30 03:12:01 2026] NVRM: x", None, None, None, "WARNING"),
    ("nv-fabricmanager: [Nov 30 2026 03:12:01] [ERROR] x", None, None, None, "nv-fabricmanager"),
    ("dcgm: I1130 03:12:01.000000 1 x.go:1] x", None, None, None, "dcgm"),
    # payloads that begin like a label are none: the kernel's subsystems, a journal tag, an exception
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", None, None, None, "NVRM"),
    ("nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1", None, None, None, "nvidia-nvswitch1"),
    ("kernel: [ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79", None, None, None, "NVRM"),
    ("RuntimeError: [rank3]:[E1130 03:22:01.518432000 ProcessGroupNCCL.cpp:616] x", None, None, None,
     "RuntimeError"),
    ("torch.distributed.DistBackendError: [Mon Nov 30 03:12:01 2026] x", None, None, None, "torch.distributed"),
    ("watchdog: BUG: soft lockup - CPU#3 stuck for 22s!", None, None, None, "watchdog"),
])
def test_a_parallel_shell_or_launcher_label_is_peeled(line, ts, host, rank, rest_start):
    """pdsh/clush ``host: ``, ``srun --label``'s task number, torchrun's ``[default0]:`` and Open MPI's
    ``[1,3]<stdout>:`` stand before the line's own prefixes (formats.md §1.8): the stamp behind them is read, a
    host label names the host. A payload's own ``word: `` is no label."""
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.host, p.rank) == (ts, host, rank)
    assert p.rest.startswith(rest_start), p.rest


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.from_regex(LAYERS["label"]), st.text(min_size=1),
                 st.sampled_from(["[rank8]:[E1130 ", "[rank8]: ", "[rank8]:", "node07: NVRM: ", " 12: [", "[default0]:",
                                  "[1,3]<stdout>:", "[80746] ", "[80746] [rank0]:[E", "bench.cn-d004 [stderr] ",
                                  "x [stdout] [rank1]:[E"])
                 .flatmap(lambda head: st.text().map(lambda tail: head + tail))))
def test_the_label_is_asked_for_wherever_it_can_match(text):
    """``parse_prefix`` asks the label regex only where a cheap look says it can match (``prefix._label``):
    the look never hides a label."""
    from ingest.prefix import _LABEL, _label

    assert (_label(text) is None) == (_LABEL.match(text) is None), text


def test_a_long_run_of_digits_in_a_bracket_is_read_in_linear_time():
    """A bracket label's role and digits are separate runs: ``[a`` and 60,000 digits took 15 s of backtracking
    (a break-it pass). A guard against that, not a speed target: the alarm is ~10,000 times the time it takes."""
    import signal

    def too_slow(*_):
        raise TimeoutError("parse_prefix backtracks")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(10)
    try:
        for line in ("[a" + "0" * 60_000 + " NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
                     "node07: [a" + "0" * 60_000 + "]: NVRM: x", "node07: " + "[a0]:" * 10_000):
            assert parse_prefix(line, ref_us=REF).ts is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_raw_monotonic_is_kept():
    assert parse_prefix("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0").mono == 1843.308145


def test_journalctls_short_monotonic_names_the_host_after_the_stamp(pipeline):
    """journalctl -o short-monotonic: "[ 3731.387530] node2 kernel: NVRM: Xid …" (journalctl(1)); a merged journal of
    two hosts put node2's Xid 79 on the file's name, with node1's GPU preamble's UUID (a real-logs pass). The host after
    the stamp is the line's; a kernel message after a raw stamp ("mlx5_core 0000:ab:00.0 mlx5_5: …") names none."""
    import orjson

    from ingest.decode import Decoded, Segment

    p = parse_prefix("[ 3731.387530] node2 kernel: NVRM: Xid (PCI:0000:a1:00): 79, pid=123, name=python, GPU has "
                     "fallen off the bus.")
    assert (p.mono, p.host, p.rest[:9]) == (3731.38753, "node2", "NVRM: Xid")
    assert parse_prefix("[   12.3] mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN").host is None
    text = ("[ 3731.387524] node1 kernel: NVRM: GPU at PCI:0000:a1:00: GPU-979426f2-893a-7cbb-c4cf-81472f89a462\n"
            "[ 3731.387530] node2 kernel: NVRM: Xid (PCI:0000:a1:00): 79, pid=123, name=python, GPU has fallen off the "
            "bus.\n")
    seg = Segment(data=text.encode(), origin="file:journal.txt", stream="file:journal.txt", host="journal",
                  ref_ts=1_800_000_000_000_000, ref_basis="file", ingest_ts=1_800_000_000_000_000)
    got = [(e["host"], orjson.loads(e["details"]).get("uuid")) for e in
           pipeline.run(Decoded(segments=[seg])).events.to_pylist()]
    assert got == [("node2", None)], got


def test_nccl_prefix_gives_host_pid_and_cuda_device():
    p = parse_prefix(" node01:124:209 [4] NCCL INFO Channel 19/0 : 4[4] -> 5[5] via P2P/CUMEM/read")
    assert (p.host, p.pid, p.gpu_index) == ("node01", 124, 4)


@pytest.mark.parametrize("line,ts,rest", [
    # vLLM's logger (vllm/logger.py "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] ", datefmt "%m-%d %H:%M:%S"):
    # vllm-project/vllm#5828, and the later bracketed file of vllm-project/vllm#21661
    ("INFO 06-25 15:26:04 api_server.py:177] vLLM API server version 0.5.0.post1", us(2026, 6, 25, 15, 26, 4),
     "vLLM API server"),
    ("ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] RuntimeError: NCCL error: unhandled cuda error",
     us(2026, 11, 4, 18, 2, 56), "RuntimeError"),
    ("WARNING 11-30 11:59:59.250 [core.py:1] x", us(2026, 11, 30, 11, 59, 59) + 250000, "x"),
    # a month-day no calendar has is no time, and a level word alone is no stamp
    ("ERROR 13-45 18:02:56 [core.py:1] x", None, "x"),
    ("ERROR: 11-04 18:02:56 x", None, "ERROR: 11-04"),
    ("INFO 11-04 18:02:56 no file and line", None, "INFO 11-04"),
])
def test_vllm_stamp_gives_the_time_with_the_year_of_the_reference(line, ts, rest):
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.rest[:len(rest)]) == (ts, rest)
    assert p.year_inferred is (ts is not None)


@pytest.mark.parametrize("line,ts,precision,rank,rest", [
    # a stamp to the minute before each line, after a blank (NVIDIA/nccl#1610): its minute, and c10's rank behind it
    (" 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught",
     us(2025, 2, 18, 12, 54), 60 * 10**6, 13, "[Rank 1]"),
    ("2025-02-18 12:54 node01 kernel: NVRM: Xid", us(2025, 2, 18, 12, 54), 60 * 10**6, None, "NVRM: Xid"),
    ("2025-02-18T12:54:07 x", us(2025, 2, 18, 12, 54, 7), 10**6, None, "x"),
    # no stamp: a minute cut short, an hour alone, nvidia-smi -q's indented rows keep their blanks
    ("2025-02-18 12:5 x", None, 1, None, "2025-02-18 12:5 x"),
    ("2025-02-18 12 x", None, 1, None, "2025-02-18 12 x"),
    ("    Link 0: <inactive>", None, 1, None, "    Link 0: <inactive>"),
])
def test_iso_stamp_to_the_minute(line, ts, precision, rank, rest):
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.precision_us, p.rank, p.rest[:len(rest)]) == (ts, precision, rank, rest)


@pytest.mark.parametrize("line,ts,rest", [
    # SGLang's logger: its parallel ranks inside the bracket, after the stamp (a break-it pass)
    ("[2025-11-04 18:02:56 TP1] Scheduler hit an exception: Traceback", us(2025, 11, 4, 18, 2, 56), "Scheduler"),
    ("[2025-11-04 18:02:58 DP0 TP3] torch.distributed.DistBackendError: x", us(2025, 11, 4, 18, 2, 58), "torch."),
    ("[2025-11-04 18:02:58 tp3] x", None, "[2025-11-04"),
    # a garbled first byte (a replacement character), control characters or a byte-order mark before a stamp: the
    # stamp is read (it took the time of the line before it, a break-it pass)
    ("\ufffd[Mon Nov 30 03:12:09 2026] NVRM: Xid (PCI:0000:3b:00): 79", us(2026, 11, 30, 3, 12, 9), "NVRM: Xid"),
    ("\x01\x7f\ufeff2026-11-30T03:12:09Z node07 kernel: NVRM: x", us(2026, 11, 30, 3, 12, 9), "NVRM: x"),
])
def test_a_stamp_behind_sglangs_ranks_or_a_damaged_first_byte_is_read(line, ts, rest):
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.rest[:len(rest)]) == (ts, rest)


def test_year_is_inferred_back_across_new_year():
    # a December line read on 2 January belongs to the year before
    jan2 = to_us(datetime(2027, 1, 2, tzinfo=timezone.utc))
    p = parse_prefix("Dec 31 23:59:59 node07 kernel: NVRM: x", ref_us=jan2)
    assert datetime.fromtimestamp(p.ts / 1e6, tz=timezone.utc).year == 2026 and p.year_inferred


def test_zone_of_stamps_without_one_is_configurable():
    tz = ZoneInfo("Asia/Shanghai")
    p = parse_prefix("[Fri Mar  3 04:44:24 2023] NVRM: x", tz=tz)
    assert p.ts == us(2023, 3, 3, 4, 44, 24, tz=tz)


def test_a_zone_name_is_the_configured_zones_when_it_is_its_own():
    """journalctl short-full prints the local zone's name: Asia/Manila's PST is +08:00, not the US Pacific's -08:00
    (a break-it pass: 16 hours off); CST in Asia/Shanghai is China's. Elsewhere PST is the Pacific's."""
    line = "Sun 2026-11-29 03:12:05 {z} node07 kernel: NVRM: Xid 79"
    manila, shanghai = ZoneInfo("Asia/Manila"), ZoneInfo("Asia/Shanghai")
    assert parse_prefix(line.format(z="PST"), tz=manila).ts == us(2026, 11, 28, 19, 12, 5)
    assert parse_prefix(line.format(z="CST"), tz=shanghai).ts == us(2026, 11, 28, 19, 12, 5)
    assert parse_prefix(line.format(z="PST"), tz=ZoneInfo("UTC")).ts == us(2026, 11, 29, 11, 12, 5)
    # the hour New York's clocks fall back: EST and EDT are an hour apart though the zone is one (a break-it pass)
    ny = ZoneInfo("America/New_York")
    assert parse_prefix(line.format(z="EST").replace("11-29 03", "11-01 01"), tz=ny).ts == us(2026, 11, 1, 6, 12, 5)
    assert parse_prefix(line.format(z="EDT").replace("11-29 03", "11-01 01"), tz=ny).ts == us(2026, 11, 1, 5, 12, 5)


def test_impossible_dates_do_not_raise():
    for line in ("[Fri Feb 30 04:44:24 2023] NVRM: x", "Feb 30 25:61:99 node07 kernel: x",
                 "2025-13-45T99:99:99Z NVRM: x", "[rank0]:[E1399 99:99:99.1 x.cpp:1] y"):
        p = parse_prefix(line, ref_us=REF)
        assert p.ts is None


def test_iso_forms():
    assert parse_iso_us("2026-04-22T21:25:20.458998481Z") == us(2026, 4, 22, 21, 25, 20) + 458998
    assert parse_iso_us("2025-05-27T04:18:56,089671+02:00") == us(2025, 5, 27, 2, 18, 56) + 89671
    assert parse_iso_us("not a time") is None


@pytest.mark.parametrize("name", sorted(LAYERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_layer_is_tried_for_every_first_character_that_can_begin_it(name, data):
    """``parse_prefix`` skips a layer whose regex cannot match the text's first character (``can_begin``):
    every text the layer's regex matches (generated from the regex itself, Unicode included) begins with a
    character for which ``can_begin`` names that layer, so skipping never changes the result."""
    text = data.draw(st.from_regex(LAYERS[name]))
    assert LAYERS[name].match(text)
    assert name in can_begin(text[0]), (name, text[:40])


def test_skipping_layers_gives_the_result_of_trying_them_all():
    """A line whose layers start with the characters that decide which layers are tried (Unicode digits,
    Cyrillic and CJK months, hex letters, ``<``, ``[``, ``k``) reads as each layer's own test says."""
    assert parse_prefix("фев 12 00:48:02 node02 kernel: NVRM: Xid", ref_us=REF).host == "node02"
    assert parse_prefix("fe80::1: kern: err: [2026-04-22T21:25:20Z]: x", ref_us=REF).source_addr == "fe80::1"
    p = parse_prefix("kernel: [  12.5] NVRM: x", ref_us=REF)
    assert (p.mono, p.rest) == (12.5, "NVRM: x")
    p = parse_prefix("I1025 02:19:08.002792       1 health.go:151] x", ref_us=REF)
    assert p.ts is not None and p.rest == "x"
    assert parse_prefix("١٢:٠٠ NVRM: x", ref_us=REF).rest == "١٢:٠٠ NVRM: x"


@pytest.mark.parametrize("line,word", [
    ("2026-11-15 14:15:51,456 ERROR trainer: RuntimeError: CUDA error: uncorrectable ECC error encountered", "ERROR"),
    ("2026-11-15T14:15:51Z WARN nccl: x", "WARN"),
    ("2026-11-15T14:15:51.5+00:00 info kubelet: NVRM: Xid (PCI:0000:3b:00): 79", "info"),
    ("Nov 15 14:15:51 CRITICAL launcher: x", "CRITICAL"), ("Nov 15 14:15:51 debug: x", "debug:")])
def test_a_log_level_where_a_header_puts_its_host_is_no_host(line, word):
    """Python logging's "%(asctime)s %(levelname)s %(name)s: …" has the shape of an ISO or syslog header with a host
    and a tag: every such line was of host "error" (or "warn", "info"), over its file's, its record's key and NCCL's
    own (a break-it pass). A level word there is the message's first word; the stamp is still the line's time."""
    p = parse_prefix(line, ref_us=REF)
    assert (p.host, p.rest.split()[0]) == (None, word)
    assert p.ts is not None
    assert parse_prefix("2026-11-15T14:15:51Z WARN nccl: node09:123:456 [3] NCCL WARN x", ref_us=REF).host == "node09"
    assert parse_prefix("2026-11-15T14:15:51Z errata kernel: x", ref_us=REF).host == "errata"


@pytest.mark.parametrize("line", [
    "2016-02-30T23:59:50+00:00 node08 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234",
    "2016-12-31T23:59:50+99:00 node08 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234",
    "Feb 30 12:00:00 node08 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234"])
def test_a_stamp_no_calendar_has_keeps_its_headers_host(line):
    """A header whose stamp is no date (30 February, an offset of +99:00) still names the host and the tag: the host
    went with the time, and two hosts' Xid 79 lines were one event of the file's host (a break-it pass)."""
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.host, p.rest) == (None, "node08", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234")


def test_a_leap_second_is_the_second_after_59():
    """RFC 3339 §5.7 allows second 60 ("1990-12-31T23:59:60Z"), and syslog prints the kernel's clock as it steps: no
    datetime holds it, and the line lost its time and its host (a break-it pass). It is read as the next second."""
    p = parse_prefix("2016-12-31T23:59:60.500000+00:00 node07 kernel: NVRM: x", ref_us=REF)
    assert (p.ts, p.host) == (us(2017, 1, 1, 0, 0, 0) + 500000, "node07")
    p = parse_prefix("Dec 31 23:59:60 node09 kernel: NVRM: x", ref_us=us(2017, 1, 1, 0, 5, 0))
    assert (p.ts, p.host) == (us(2017, 1, 1, 0, 0, 0), "node09")
    assert parse_prefix("2016-12-31T23:58:60Z node07 kernel: x", ref_us=REF).ts is None  # only a minute's last second


@pytest.mark.parametrize("line,ref,ts,rest", [
    # a paste with its hosts cut out (flashinfer-ai/flashinfer#3869): the clock and the reference's day
    ("19:14:43  NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception", us(2026, 11, 30, 20, 0, 0),
     us(2026, 11, 30, 19, 14, 43), "NVRM: Xid"),
    ("19:15:34.250 NVRM: Xid (PCI:0000:9a:00): 31, pid=1", us(2026, 11, 30, 20, 0, 0),
     us(2026, 11, 30, 19, 15, 34) + 250000, "NVRM: Xid"),
    # a log from before midnight read after it: the day before; a clock a little ahead of its reference: the same day
    ("23:59:58 NVRM: Xid (PCI:0000:9a:00): 79", us(2026, 12, 1, 0, 3, 0), us(2026, 11, 30, 23, 59, 58), "NVRM"),
    ("00:00:30 NVRM: Xid (PCI:0000:9a:00): 79", us(2026, 11, 30, 23, 59, 50), us(2026, 12, 1, 0, 0, 30), "NVRM"),
    # a stamp behind the clock wins (modelscope/ms-swift#7992)
    ("18:11:06.680 " + _C10_LINE, us(2026, 12, 1, 0, 0, 0), us(2026, 11, 30, 3, 22, 1) + 518432, "[Rank 8]"),
    # no reference: no day, no time; a clock no day has is none
    ("19:14:43 NVRM: Xid", None, None, "NVRM"),
    ("24:14:43 NVRM: Xid", us(2026, 11, 30, 20, 0, 0), None, "24:14:43 NVRM"),
])
def test_a_clock_without_a_date_takes_the_day_of_its_reference(line, ref, ts, rest):
    p = parse_prefix(line, ref_us=ref)
    assert (p.ts, p.rest[:len(rest)]) == (ts, rest)
    assert p.dayless == (ts is not None and rest != "[Rank 8]") and p.year_inferred == (ts is not None)


def test_a_syslog_stamp_with_two_blanks_and_no_host_is_read():
    # "Aug 19 11:36:35  NVRM: Xid …" (amoghmunikote/cmpunlocker#31: a paste with its host cut out, two blanks left)
    p = parse_prefix("Aug 19 11:36:35  NVRM: Xid (PCI:0000:02:00): 31, pid=56543", ref_us=REF)
    assert (p.ts, p.host, p.rest[:9]) == (us(2026, 8, 19, 11, 36, 35), None, "NVRM: Xid")
    # the word after the two blanks is the message's, not a host (a driver's name was a host: a break-it pass)
    p = parse_prefix("Nov  4 10:00:02  mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN", ref_us=REF)
    assert (p.ts, p.host, p.rest[:10]) == (us(2026, 11, 4, 10, 0, 2), None, "mlx5_core ")
    p = parse_prefix("Aug 19 11:36:35 node07 kernel: NVRM: Xid (PCI:0000:02:00): 31", ref_us=REF)
    assert (p.ts, p.host, p.rest[:9]) == (us(2026, 8, 19, 11, 36, 35), "node07", "NVRM: Xid")
    # a host and a tag with ": " after the two blanks are the header's (gpu-node-7 was lost: a second break-it pass)
    p = parse_prefix("Nov 20 08:00:01  gpu-node-7 kernel: NVRM: Xid (PCI:0000:02:00): 79", ref_us=REF)
    assert (p.host, p.rest[:9]) == ("gpu-node-7", "NVRM: Xid")


def test_abseils_prefix_before_its_time_zone_is_set_up_gives_the_epoch_seconds():
    # "E0000 00:00:1743713172.513857  698835 file.cc:3072] " (EnzymeAD/Enzyme-JAX#623: XLA's line took its file's time)
    p = parse_prefix("E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] Execution of replica "
                     "0 failed: DEADLINE_EXCEEDED", ref_us=REF)
    assert (p.ts, p.precision_us, p.rest[:9]) == (1743713172513857, 1, "Execution")
    # glog's own date still reads as before; a zero date with no epoch is no stamp
    glog = parse_prefix("E0929 17:42:48.594192 1044529 client.cc:332] x", ref_us=REF)
    assert glog.ts == us(2026, 9, 29, 17, 42, 48) + 594192
    assert parse_prefix("E0000 00:00:0000000000.000000     100 a.cc:1] x", ref_us=REF).ts is None


@pytest.mark.parametrize("name", ["localhost", "localhost.localdomain", "LOCALHOST", "(none)", "127.0.0.1",
                                  "127.0.1.1", "::1", "ip6-localhost", "::ffff:127.0.0.1"])
def test_a_name_every_machine_may_have_names_no_host(name):
    # three machines' syslog lines, each "localhost", were one host (a break-it pass): the file's, the key's or the
    # envelope's name wins; a real name or address still names its host
    p = parse_prefix(f"Nov 30 03:10:00 {name} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0", ref_us=REF)
    assert (p.host, p.ts, p.rest[:9]) == (None, us(2026, 11, 30, 3, 10, 0), "NVRM: Xid")
    if name != "(none)" and ":" not in name:  # no names NCCL's prefix reads
        n = parse_prefix(f"{name}:1234:1290 [3] NCCL WARN Net : Connection closed by remote peer", ref_us=REF)
        assert (n.host, n.gpu_index) == (None, 3)
    for real in ("node07", "10.0.0.7", "localhost-07"):
        assert parse_prefix(f"Nov 30 03:10:00 {real} kernel: NVRM: Xid", ref_us=REF).host == real


def test_a_wrappers_zoneless_stamp_whole_hours_from_c10s_gives_way_to_it():
    # "2025-06-24 17:29:06  [rank0]:[E624 09:29:06.969…]" (limuloo/PyDIff#31): the wrapper's local time, 8 h from the
    # process's own stamp, which the rank's lines without the wrapper print; one timeout was two incidents 8 h apart
    line = "2025-06-24 17:29:06  [rank0]:[E624 09:29:06.969438582 ProcessGroupNCCL.cpp:1785] [Rank 0] Exception"
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.rank, p.yearless) == (us(2025, 6, 24, 9, 29, 6) + 969438, 0, None)
    # a stamp with its zone, or one a moment from c10's, stays the line's time
    for outer, ts in (("2025-06-24T17:29:06Z ", us(2025, 6, 24, 17, 29, 6)),
                      ("2025-06-24 09:29:07  ", us(2025, 6, 24, 9, 29, 7)),
                      ("2025-06-24 09:59:06  ", us(2025, 6, 24, 9, 59, 6))):
        assert parse_prefix(outer + line.split("  ", 1)[1], ref_us=REF).ts == ts, outer


def test_a_cuda_device_index_no_host_has_names_no_gpu():
    # "node2:24881:25569 [32707] include/alloc.h:243 NCCL WARN Cuda failure 'driver shutting down'" (NVIDIA/nccl#1485):
    # a thread's garbage, once a suspect "gpu index 32707"; the host and pid stay the line's
    p = parse_prefix("node2:24881:25569 [32707] include/alloc.h:243 NCCL WARN Cuda failure 'driver shutting down'")
    assert (p.host, p.pid, p.gpu_index) == ("node2", 24881, None)
    assert parse_prefix("node2:24881:25569 [959657526] x NCCL WARN y").gpu_index is None
    assert parse_prefix("node2:24881:25569 [7] x NCCL WARN y").gpu_index == 7


@pytest.mark.parametrize("line, host, pid", [
    # openucx/ucx#6000, #9590: UCX's log prefix; the pid padded to five (msr-fiddle/pipedream#76's signal handler)
    ("[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE", "compute001",
     31180),
    # a Docker container's short id names no machine: the pid only
    ("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)", None, 3039),
    # a host without a digit: the pid's width (UCX pads it to five) makes the prefix UCX's
    ("[gpuhost:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded", "gpuhost", 31180),
    # behind mpirun's --tag-output label
    ("[1,13]<stderr>:[lxbk1127:2330856:0:2330856] ib_mlx5_log.c:177  Transport retry", "lxbk1127", 2330856),
])
def test_ucxs_prefix_names_the_host_and_pid(line, host, pid):
    p = parse_prefix(line, ref_us=REF)
    assert (p.host, p.pid) == (host, pid)


def test_ucxs_prefix_does_not_override_a_hosts_own_prefix_nor_read_other_brackets():
    p = parse_prefix("Dec  1 10:00:00 nodeA app[12]: [nodeB:1:0:1] x", ref_us=REF)
    assert (p.host, p.pid) == ("nodeA", 12)
    p = parse_prefix("Oct  2 12:00:00 nodeA kernel: [nodeB1:1:0:1] x", ref_us=REF)
    assert (p.host, p.pid) == ("nodeA", None)  # not nodeB1's process's pid
    for line in ("[rank8]:[E1129 03:20:00.040000 ProcessGroupNCCL.cpp:1] x", "[12:34:56:78] x", "[a:b:c:d] x",
                 "[Epoch:1:2:3] loss", "[INFO:1:2:3] x", "[iter:100:200:300] loss", "[step1:2:3:4] foo",
                 "[Layer12:1:0:4] x"):
        assert parse_prefix(line, ref_us=REF).host is None, line


def test_ucxs_log_stamp_is_unix_time_not_an_uptime():
    """UCX's logger prints Unix seconds before "[host:pid:tid]" (ucs/debug/log.c): "[1739305867.605579]
    [dgx14:1131436:0] mpool.c:269 UCX ERROR Failed to allocate memory pool" (rapidsai/rapidsmpf#69) was read as a
    55-year uptime, timed by its file, and Open MPI's line below it took that time as its own. A kernel's raw stamp
    stays one."""
    p = parse_prefix("[1739305867.605579] [dgx14:1131436:0]           mpool.c:269  UCX  ERROR Failed", ref_us=REF)
    assert (p.ts, p.mono, p.host, p.pid, p.rest) == (1739305867605579, None, "dgx14", 1131436,
                                                     "mpool.c:269  UCX  ERROR Failed")
    for line in ("[ 4567.123456] NVRM: Xid (PCI:0000:3b:00): 79", "[1739305867.605579] eth0: link up"):
        p = parse_prefix(line, ref_us=REF)
        assert p.ts is None and p.mono is not None, line


def test_hugging_faces_example_logging_stamp_is_read_month_first_and_behind_a_pdsh_label():
    """hiyouga/LlamaFactory#2470 (a real-logs pass): "02/11/2024 22:38:41 - INFO - llmtuner.data.template - …"
    (transformers' example scripts: datefmt "%m/%d/%Y %H:%M:%S", then " - <level> - ") gave no time, and pdsh's
    "gpu004: " before it no host. Month first; only before " - <level> - "."""
    p = parse_prefix("02/11/2024 22:38:41 - INFO - llmtuner.data.template - Replace eos token", ref_us=REF)
    assert (p.ts, p.rest) == (us(2024, 2, 11, 22, 38, 41), "INFO - llmtuner.data.template - Replace eos token")
    p = parse_prefix("gpu004: 02/11/2024 22:38:41 - WARNING - x - y", ref_us=REF)
    assert (p.host, p.ts) == ("gpu004", us(2024, 2, 11, 22, 38, 41))
    for line in ("02/11/2024 22:38:41 something", "02/11/2024 22:38:41 - note - x"):
        assert parse_prefix(line, ref_us=REF).ts is None, line
    assert parse_prefix("13/11/2024 22:38:41 - INFO - x", ref_us=REF).unreadable == "13/11/2024 22:38:41"


def test_cufiles_stamp_is_read_day_first_with_unpadded_milliseconds_and_its_pid():
    """NVIDIA/gds-nvidia-fs#19, #31, tinygrad/open-gpu-kernel-modules#50 (a real-logs pass): cuFile's log, cufile.log,
    stamps " 29-12-2025 13:30:14:51 [pid=111425 tid=112507] ERROR …" — day first, milliseconds after a colon without
    padding ("51" is 51 ms, "865" 865 ms) — and its lines were timed by their file. Only before "[pid=N tid=N] "; a
    date no calendar has is said to be unreadable; pdsh's label before it names the host."""
    p = parse_prefix(" 29-12-2025 13:30:14:51 [pid=111425 tid=112507] ERROR  0:522 nvidia-fs MAP ioctl failed",
                     ref_us=REF)
    assert (p.ts, p.precision_us, p.pid, p.rest) == (us(2025, 12, 29, 13, 30, 14) + 51_000, 1000, 111425,
                                                     "ERROR  0:522 nvidia-fs MAP ioctl failed")
    p = parse_prefix("06-11-2023 20:12:02:865 [pid=157254 tid=157254] ERROR  cufio-drv:716 x", ref_us=REF)
    assert (p.ts, p.pid) == (us(2023, 11, 6, 20, 12, 2) + 865_000, 157254)
    p = parse_prefix("node7: 29-12-2025 13:30:14:51 [pid=1 tid=1] ERROR x", ref_us=REF)
    assert (p.host, p.ts) == ("node7", us(2025, 12, 29, 13, 30, 14) + 51_000)
    # pdsh before cuFile's own blank: two blanks after the label (a break-it pass: neither host nor time was read)
    p = parse_prefix("node7:  29-12-2025 13:30:14:51 [pid=1 tid=1] ERROR x", ref_us=REF)
    assert (p.host, p.ts) == ("node7", us(2025, 12, 29, 13, 30, 14) + 51_000)
    assert parse_prefix("29-12-2025 13:30:14:51 hello", ref_us=REF).ts is None
    bad = parse_prefix("32-12-2025 13:30:14:51 [pid=1 tid=1] ERROR x", ref_us=REF)
    assert bad.unreadable == "32-12-2025 13:30:14:51"


def test_a_dmesg_t_stamp_no_calendar_has_is_said_unreadable_in_every_locale():
    """dmesg -T's ctime stamp, English or another locale's, of a date no calendar has (29 February of 2026, an hour
    25): it is peeled off the line, and said (``details.ts_unreadable``) as a syslog header's is; it was peeled
    unsaid, as if the line had printed no stamp (a break-it pass)."""
    for line, stamp in (("[Sun Feb 29 10:00:00 2026] NVRM: Xid", "Sun Feb 29 10:00:00 2026"),
                        ("[Сб фев 29 10:00:00 2026] NVRM: Xid", "Сб фев 29 10:00:00 2026"),
                        ("[Sa 29. Feb 10:00:00 2026] NVRM: Xid", "Sa 29. Feb 10:00:00 2026"),
                        ("[木  3月 16 25:01:28 2023] NVRM: Xid", "木  3月 16 25:01:28 2023")):
        p = parse_prefix(line, ref_us=REF)
        assert (p.ts, p.unreadable, p.rest) == (None, stamp, "NVRM: Xid"), line
    assert parse_prefix("[Sun Mar  1 10:00:00 2026] NVRM: Xid", ref_us=REF).unreadable is None


def test_a_dmesg_t_stamp_whose_month_no_locale_names_is_said_unreadable():
    """dmesg -T's stamp with a month no locale here names ("Xyz", "13月", a garbled byte; hr_HR's "ožu", left out
    of ``MONTHS`` as its other names are other locales' months) was no stamp: left on the line, unsaid, and the line
    took the time of the line before it (a helper's pass). Of dmesg -T's shape in any of its layouts, it is peeled
    and said (``details.ts_unreadable``) as a date no calendar has is; the line's other prefixes are still read; a
    known month in any layout is read as before."""
    for line, stamp in (("[Mon Xyz 12 10:00:00 2026] NVRM: Xid", "Mon Xyz 12 10:00:00 2026"),
                        ("[火 13月 16 14:01:28 2023] NVRM: Xid", "火 13月 16 14:01:28 2023"),
                        ("[木  0月  5 14:01:28 2023] NVRM: Xid", "木  0月  5 14:01:28 2023"),
                        ("[Sa  5. Xyz 10:00:00 2026] NVRM: Xid", "Sa  5. Xyz 10:00:00 2026"),
                        ("[Po  7. xyz 2026 05:52:27] NVRM: Xid", "Po  7. xyz 2026 05:52:27"),
                        ("[Pon ožu  2 10:00:00 2026] NVRM: Xid", "Pon ožu  2 10:00:00 2026"),
                        ("[Xyz 16 2025 15:10:21] NVRM: Xid", "Xyz 16 2025 15:10:21")):
        p = parse_prefix(line, ref_us=REF)
        assert (p.ts, p.unreadable, p.rest) == (None, stamp, "NVRM: Xid"), line
    # the year of a layout that prints it before the time is no longer where the unreadable stamp ends
    p = parse_prefix("[Po 30. úno 2026 05:52:27] NVRM: Xid", ref_us=REF)
    assert (p.ts, p.unreadable, p.rest) == (None, "Po 30. úno 2026 05:52:27", "NVRM: Xid")
    # Open MPI's unbracketed ctime stamp: its label after it is still read
    p = parse_prefix("Fri Xyz 11 12:31:45 2023[1,3]<stdout>: NCCL WARN x", ref_us=REF)
    assert (p.ts, p.unreadable, p.launcher_rank, p.rest) == (None, "Fri Xyz 11 12:31:45 2023", 3, "NCCL WARN x")
    for line, ts in (("[Mon Dec  1 03:04:05 2026] NVRM: Xid", us(2026, 12, 1, 3, 4, 5)),
                     ("[木  3月 16 14:01:28 2023] NVRM: Xid", us(2023, 3, 16, 14, 1, 28)),
                     ("[Po  7. pro 2026 05:52:27] NVRM: Xid", us(2026, 12, 7, 5, 52, 27)),
                     ("[May 16 2025 15:10:21] NVRM: Xid", us(2025, 5, 16, 15, 10, 21))):
        p = parse_prefix(line, ref_us=REF)
        assert (p.ts, p.unreadable, p.rest) == (ts, None, "NVRM: Xid"), line
    # a bracket of words that is not its shape (no time, no year) is the line's, not a stamp
    # ... nor a logger's level and thread where the weekday and month stand
    for line in ("[Mon Xyz 12] NVRM: Xid", "[Mon Xyz 12 10:00:00] NVRM: Xid", "[INFO Xyz 12 10:00 2026] x",
                 "[INFO main  5 10:00:00 2026] NVRM: Xid", "[warn  5. main 2026 10:00:00] NVRM: Xid"):
        p = parse_prefix(line, ref_us=REF)
        assert (p.ts, p.unreadable, p.rest) == (None, None, line), line

def test_iso_times_to_us_are_exact_on_both_sides_of_1970():
    """``int(dt.timestamp())`` rounded toward zero: 1969-12-31T23:59:59.5Z became +0.5 s in three readers of the
    API's times (``schemas.incidents.iso_us``, the incident page's and the report's), 1 s late (a break-it pass;
    ingest keeps no time before 2000, so no stored time hit it). They read through ``ingest.prefix.to_us`` now."""
    from datetime import datetime, timezone

    from api.degraded_links import to_us as report_us
    from api.incident_render import _us as page_us
    from schemas.incidents import iso_us

    for text, want in (("1969-12-31T23:59:59.500000Z", -500_000), ("1970-01-01T00:00:00.000000Z", 0),
                       ("1969-01-01T00:00:00.000001Z", -31_535_999_999_999),
                       ("2038-01-19T03:14:08.000001Z", 2_147_483_648_000_001)):
        assert iso_us(text) == page_us(text) == want, text
        assert report_us(datetime.fromisoformat(text.replace("Z", "+00:00"))) == want, text
    assert report_us(datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=timezone.utc)) == -500_000


def test_a_launchers_label_after_a_syslog_tag_gives_the_worker_and_drops_the_launchers_pid():
    """torchrun's output through the journal: "torchrun[777]: [default3]: …" — the tag's pid is torchrun's, the same
    for every worker it relays, and "[default3]:" says which worker of the node printed the line (its local rank).
    The label behind a tag was not read and every worker's line had pid 777 (a defect pass). A tag with no label
    keeps its pid: the line's own process ("python[4181]: …")."""
    p = parse_prefix("Dec  5 10:00:01 node03 torchrun[777]: [default3]:*** SIGABRT received at time=1764559201 on cpu "
                     "3 ***", ref_us=REF)
    assert (p.host, p.pid, p.local_rank, p.rest[:10]) == ("node03", None, 3, "*** SIGABR")
    p = parse_prefix("Dec  5 10:00:01 node03 torchrun[777]: [default3]:" + _C10_LINE, ref_us=REF)
    assert (p.pid, p.local_rank, p.rank) == (None, 3, 8)
    p = parse_prefix("Dec  5 10:00:01 node03 python[4181]: " + _C10_LINE, ref_us=REF)
    assert (p.pid, p.local_rank, p.rank) == (4181, None, 8)
    p = parse_prefix("[default0]:" + _C10_LINE, ref_us=REF)
    assert (p.pid, p.local_rank, p.rank) == (None, 0, 8)


def test_open_mpis_tag_output_label_gives_the_launcher_rank_not_the_lines_rank():
    """Open MPI's ``--tag-output`` "[jobid,rank]<stderr>:" names the process's MPI rank (horovod/horovod#3412: every
    rank's "Horovod has been shut down" had none, a real-logs pass): ``launcher_rank``, which the pipeline gives
    a training process's line; c10's "[rankN]:" behind it stays the line's own rank."""
    p = parse_prefix("[1,3]<stderr>:Horovod has been shut down. This was caused by an exception", ref_us=REF)
    assert (p.launcher_rank, p.rank, p.rest[:7]) == (3, None, "Horovod")
    p = parse_prefix("[1,3]<stderr>:" + _C10_LINE, ref_us=REF)
    assert (p.launcher_rank, p.rank) == (3, 8)
    assert parse_prefix("[default0]:Horovod has been shut down.", ref_us=REF).launcher_rank is None


# ---- the fabric's own logs: OpenSM's log file, SONiC's syslog headers ----

@pytest.mark.parametrize("line,ts,rest_start", [
    # linux-rdma/opensm osm_log.c: "%s %02d %02d:%02d:%02d %06d [%04X] 0x%02x -> %s" (the catalog's ib.opensm_*
    # examples: OpenSM 5.21's log of an ibsim walkthrough)
    ("Jun 17 17:21:28 933162 [3DA006C0] 0x02 -> drop_mgr_remove_port: Removed port with GUID:0x0000000000100004 LID "
     "range [5, 5] of node:Hca2", us(2026, 6, 17, 17, 21, 28) + 933162, "drop_mgr_remove_port: Removed port"),
    ("Jun 17 17:21:28 922890 [4E8006C0] 0x01 -> log_trap_info: Received Generic Notice type:1 num:128 (Link state "
     "change) Producer:2 (Switch) from LID:1 TID:0x0000000000000000", us(2026, 6, 17, 17, 21, 28) + 922890,
     "log_trap_info: "),
    # a 32-bit thread id prints its four digits and more ("[%04X]"), a day before the 10th its zero
    ("Jan 05 03:00:01 000017 [7F3A] 0x80 -> Entering MASTER state", us(2026, 1, 5, 3, 0, 1) + 17, "Entering MASTER"),
])
def test_opensm_log_file_stamp_gives_the_time_to_the_microsecond_and_no_host(line, ts, rest_start):
    """OpenSM's own log file prints month, day, time, then the µs as a number of their own, the thread and the level:
    the time (no year: the latest before the reference, as a syslog stamp's) is the line's, the host is not in it."""
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.precision_us, p.host) == (ts, 1, None)
    assert p.yearless is not None and p.year_inferred
    assert p.rest.startswith(rest_start)


def test_opensm_stamp_without_a_year_is_resolved_as_a_syslog_stamp_is():
    """A December OpenSM line read in January is of the year before, as "Dec 31 23:59:59" of syslog is."""
    line = "Dec 31 23:59:59 500000 [3DA006C0] 0x02 -> SUBNET UP"
    syslog = "Dec 31 23:59:59 node07 OpenSM[3527]: SUBNET UP"
    jan = us(2027, 1, 2, 0, 0, 0)
    assert parse_prefix(line, ref_us=jan).ts == parse_prefix(syslog, ref_us=jan).ts + 500000 == us(
        2026, 12, 31, 23, 59, 59) + 500000


@pytest.mark.parametrize("line", [
    "??? 17 17:21:28 933162 [3DA006C0] 0x02 -> SUBNET UP",  # osm_log's month for a clock it cannot read
    "Jun 17 17:21:28 node07 OpenSM[3527]: SUBNET UP",  # OpenSM's syslog copy: the syslog header's (host node07)
])
def test_opensm_layer_reads_only_its_own_stamp(line):
    p = parse_prefix(line, ref_us=REF)
    assert p.host == (None if line.startswith("?") else "node07")
    assert p.ts == (None if line.startswith("?") else us(2026, 6, 17, 17, 21, 28))


def test_opensm_stamp_of_a_date_no_calendar_has_is_untimed_and_said():
    p = parse_prefix("Feb 30 17:21:28 933162 [3DA006C0] 0x02 -> SUBNET UP", ref_us=REF)
    assert (p.ts, p.unreadable, p.rest) == (None, "Feb 30 17:21:28 933162", "SUBNET UP")


@pytest.mark.parametrize("line,ts,host,rest_start", [
    # sonic-buildimage rsyslog.conf.j2 SONiCFileFormat: year, month, day, time with µs, host, severity word, tag
    # (sonic-net/sonic-swss#3185)
    ("2024 Jun  5 02:21:24.818583 str2-7050cx3-acs-14 NOTICE swss#orchagent: :- updatePortOperStatus: Port "
     "Ethernet112 oper state set from up to down", us(2024, 6, 5, 2, 21, 24) + 818583, "str2-7050cx3-acs-14",
     ":- updatePortOperStatus"),
    # sonic-net/sonic-buildimage#26839
    ("2026 Apr 16 10:57:07.029453 qspf215 NOTICE swss#orchagent: :- updatePortErrorStatus: Port Ethernet0 oper error "
     "event: mac_local_fault occurred", us(2026, 4, 16, 10, 57, 7) + 29453, "qspf215", ":- updatePortErrorStatus"),
    # the template before the year was added (sonic-net/SONiC#194): the year resolved as a syslog stamp's
    ("May 23 09:17:30.561319 sonic-mellanox WARNING kernel: [  618.609820] sx_netdev_handle_pude_event: Called for "
     "logical port - 12500 status DOWN", us(2026, 5, 23, 9, 17, 30) + 561319, "sonic-mellanox",
     "sx_netdev_handle_pude_event"),
    # SONiCForwardFormat, what a switch sends its syslog server: "<%PRI%>%TIMESTAMP:::date-rfc3339% {{ hostname }}
    # %syslogseverity-text:::uppercase% %syslogtag%…" (the line of sonic-net/sonic-swss#3185 as forwarded)
    ("<13>2024-06-05T02:21:24.818583+00:00 str2-7050cx3-acs-14 NOTICE swss#orchagent: :- updatePortOperStatus: Port "
     "Ethernet112 oper state set from up to down", us(2024, 6, 5, 2, 21, 24) + 818583, "str2-7050cx3-acs-14",
     ":- updatePortOperStatus"),
])
def test_sonic_syslog_header_gives_time_and_host(line, ts, host, rest_start):
    """SONiC's rsyslog templates put a severity word between the host and the tag: the host and time were not read
    (every switch's lines were their file's, at its time)."""
    p = parse_prefix(line, ref_us=REF)
    assert (p.ts, p.precision_us, p.host) == (ts, 1, host)
    assert p.rest.startswith(rest_start)


def test_sonic_header_keeps_the_rest_of_the_syslog_family():
    """The severity word names a host only in SONiC's shapes: a zoneless ISO stamp before "<name> INFO <logger>:"
    is Python logging's (its logger no host), and a plain syslog header is read as before."""
    p = parse_prefix("2026-11-15 14:15:51,456 trainer INFO worker: step 3", ref_us=REF)
    assert (p.host, p.rest) == (None, "trainer INFO worker: step 3")
    p = parse_prefix("Jun  5 02:21:24 sw07 NOTICE: x", ref_us=REF)  # a tag "NOTICE", as RFC 3164 reads it
    assert (p.ts, p.host, p.rest) == (us(2026, 6, 5, 2, 21, 24), "sw07", "x")
    p = parse_prefix("2026 Feb 30 02:21:24.818583 sw1 NOTICE swss#orchagent: x", ref_us=REF)
    assert (p.ts, p.host, p.unreadable, p.rest) == (None, "sw1", "2026 Feb 30 02:21:24.818583", "x")

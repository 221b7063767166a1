"""One name per host, whoever names it: the short host name in lower case.

NCCL prints the host up to its first ``.`` (``getHostName(…, '.')``: ``node07:4242:4301 [0] NCCL INFO``,
formats.md §11.1), a kernel log relayed by rsyslog with ``$PreserveFQDN on`` the full name
(``node07.cluster.local kernel: NVRM: Xid …``), a file its name up to the first ``.``, an operator may type
``NODE07``; host names are not case-sensitive (RFC 4343). Each of these was another host, and an Xid 79 on
``a1.cluster.local`` stayed apart from the NCCL timeouts of ``a1`` (a break-it pass). IP addresses are kept
whole (``10.0.0.5``, ``fe80::1``): their first label says nothing alone. An IPv6 address is written one way, RFC
5952's (``2001:DB8:0:0::1`` and ``2001:db8::1`` were two hosts), an IPv4-mapped one with its IPv4 address dotted
(``::ffff:10.0.0.1``). A name of other letters than ASCII is written as DNS carries it (IDNA 2008 with UTS #46's
mapping, as browsers, curl and the ``idna`` package read a name): full-width letters as ASCII (``ｎｏｄｅ07`` is
``node07``), a Unicode label as its punycode A-label (``bücher`` is ``xn--bcher-kva``); both were hosts apart from
the name they spell (a stop's finding).
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import re
import unicodedata

import idna
import pyarrow as pa
import pyarrow.compute as pc

#: the first label of a name whose first label is not all digits (an IPv4 address's is; an IPv6 one holds ':')
_FQDN = r"^([^.:]*[^.:0-9][^.:]*)\..*$"
#: a name or address with a port (``node07:9100``, a Prometheus ``instance`` label; ``10.0.0.5:9092``): one ``:``
#: and digits after it (an IPv6 address holds two or more), and an IPv6 address in brackets with or without one
#: (``[fe80::1]:8080``, RFC 3986's form). ``node07:9100`` was a host beside ``node07`` while
#: ``node07.cluster.local:9100`` was ``node07`` (a break-it pass)
_PORT = r"^([^:\[\]]+):[0-9]{1,5}$"
_BRACKETED = r"^\[([^\[\]]+)\](?::[0-9]{1,5})?$"


def canonical_hosts(hosts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The host names of a string array as one name per host (module doc): lower case (Arrow's ``utf8_lower``),
    without a port (:data:`_PORT`: ``node07:9100`` -> ``node07``) or an IPv6 address's brackets
    (``[fe80::1]:8080`` -> ``fe80::1``), up to the first ``.`` unless the first label is all digits or holds a ``:``;
    an IPv6 address in RFC 5952's form (:func:`ipv6_name`); a name of other letters than ASCII as DNS carries it
    (:func:`ascii_name`: ``ＮＯＤＥ07`` -> ``node07``, ``bücher`` -> ``xn--bcher-kva``). Nulls stay null."""
    if not pc.all(pc.string_is_ascii(hosts)).as_py():  # rare: a name of ASCII alone (the hot path) is not asked
        named = [h if h is None or h.isascii() else ascii_name(h) for h in hosts.to_pylist()]
        hosts = pa.chunked_array([pa.array(named, pa.string())]) if isinstance(hosts, pa.ChunkedArray) \
            else pa.array(named, pa.string())
    return _canonical_mapped(hosts)


def _canonical_mapped(hosts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:func:`canonical_hosts` of names that :func:`ascii_name` mapped already (or ASCII)."""
    out = pc.replace_substring_regex(pc.utf8_lower(hosts), _BRACKETED, r"\1")
    out = pc.replace_substring_regex(pc.replace_substring_regex(out, _PORT, r"\1"), _FQDN, r"\1")
    colons = pc.match_substring(out, ":")
    if not pc.any(colons).as_py():
        return out
    named = [ipv6_name(h) if h is not None and ":" in h else h for h in out.to_pylist()]
    return pa.chunked_array([pa.array(named, pa.string())]) if isinstance(out, pa.ChunkedArray) \
        else pa.array(named, pa.string())


def ascii_name(text: str) -> str:
    """A host name as DNS carries it, UTS #46's processing of IDNA 2008 (``idna.uts46_remap``, non-transitional,
    without the STD3 rules: ``_`` and ``:`` stay): case folded and mapped (full-width letters, digits, ``．`` and
    ``。`` as ASCII: ``ＮＯＤＥ07．Cluster`` -> ``node07.cluster``), each label that is still no ASCII as its A-label
    (``bücher`` -> ``xn--bcher-kva``, RFC 5891). A label IDNA 2008 refuses (``ü_x``, an emoji) stays as mapped, else
    NFKC in lower case when the mapping refuses a character; in lower case alone when what the mapping makes is
    no host name (:func:`is_host_name`: ``／``, U+FF0F, is ``/``; ``－`` is ``-``, ``Ｎｏｎｅ`` ``none``); ASCII text
    as it is."""
    if text.isascii():
        return text
    try:
        mapped = idna.uts46_remap(text, std3_rules=False, transitional=False)
    except idna.IDNAError:  # a code point UTS #46 disallows
        mapped = unicodedata.normalize("NFKC", text).lower()
    labels = mapped.split(".")
    for i, label in enumerate(labels):
        if not label.isascii():
            try:
                labels[i] = idna.alabel(label).decode("ascii")
            except (idna.IDNAError, UnicodeError):  # no label IDNA 2008 allows: as mapped
                pass
    out = ".".join(labels)
    # ``／`` maps to ``/`` (no URL path can name it), ``－`` to syslog's NILVALUE ``-``, ``Ｎｏｎｅ`` to a placeholder
    return out if is_host_name(out) else text.lower()


def ipv6_name(text: str) -> str:
    """An IPv6 address (a scope too: ``fe80::1%eth0``) as RFC 5952 writes it (lower case, the longest run of zero
    groups as ``::``), an IPv4-mapped one as ``::ffff:`` and its IPv4 address dotted (as the kernel and syslog print
    it; Python 3.11 would write ``::ffff:a00:1``); any other text as it is."""
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError:
        return text
    if ip.ipv4_mapped is not None:
        return f"::ffff:{ip.ipv4_mapped}" + (f"%{ip.scope_id}" if ip.scope_id else "")
    return str(ip)


def canonical_host(name: str) -> str:
    """:func:`canonical_hosts` of one name (a setting, a fleet config key, an API parameter, a Kafka key or ``host``
    header): ``Node07.Cluster.Local`` -> ``node07``; ``10.0.0.5`` and ``fe80::1`` as they are. The answer for a name
    of at most :data:`MAX_HOST_CHARS` characters is kept for the process, as :func:`is_host_name`'s (an Arrow call
    per name: ingest asks it of each record's key or header host); a longer one is not kept (distinct long keys
    would fill memory)."""
    return _short_canonical_host(name) if len(name) <= MAX_HOST_CHARS else _canonical_host(name)


def _canonical_host(name: str) -> str:
    return _canonical_mapped(pa.array([ascii_name(name)], pa.string()))[0].as_py()


_short_canonical_host = functools.lru_cache(maxsize=65536)(_canonical_host)


#: the longest host name stored (the API's ``host`` parameters take as many: ``api.app``)
MAX_HOST_CHARS = 255
#: what no host name holds (RE2): blanks and separators (\p{Z}: space, no-break space, U+2028), control and
#: format characters (\p{Cc}, \p{Cf}: a newline splits a log line, C1 controls, zero-width characters), ``/`` (no
#: URL path segment, no DNS name: ``/hosts/{host}/timeline`` could not name it) and U+FFFD (a key that was no UTF-8)
_NOT_IN_HOST = "[\\p{Z}\\p{Cc}\\p{Cf}/\ufffd]"


#: names that are no host's (RE2): syslog's NILVALUE ``-`` (RFC 5424: the sender gave none; a line's ``-`` is read
#: so, ``ingest.prefix``) and dots alone (``.``, ``..``: a URL's dot segments, which clients resolve away, so that
#: ``/hosts/{host}/timeline`` could not name them; no DNS name is one). A Kafka key ``..`` was stored as a host
#: (a break-it pass). Nor a shipper's placeholder for a value it did not have: ``None`` (Python's ``str(None)``),
#: ``null``, ``<nil>`` (Go's ``%v`` of nil), ``undefined``, or a template left unexpanded (Logstash's ``%{host}``,
#: Fluentd's and a shell's ``${hostname}``, Jinja's ``{{host}}``, rsyslog's ``%HOSTNAME%``: omkafka sends its Key as
#: written unless ``DynaKey="on"``), or the kernel's name of a host whose name was never set (``(none)``,
#: include/linux/uts.h): every machine's records under one such key were one host "none" (break-it passes)
_NO_HOST = "^(?:-|\\.+|(?i:none|null|nil|<nil>|\\(null\\)|\\(none\\)|undefined)|%[$!.\\w-]+%)$|[$%]\\{|\\{\\{"


def not_host_names(hosts: pa.Array | pa.ChunkedArray) -> pa.BooleanArray | pa.ChunkedArray:
    """True where a host (string array) is no host name: empty, longer than :data:`MAX_HOST_CHARS`, holding what
    :data:`_NOT_IN_HOST` lists, or one of :data:`_NO_HOST`'s (``-``, dots alone, a placeholder such as ``None``
    or ``%{host}``)."""
    size = pc.utf8_length(hosts)
    return pc.or_(pc.or_(pc.or_(pc.greater(size, MAX_HOST_CHARS), pc.equal(size, 0)),
                         pc.match_substring_regex(hosts, _NOT_IN_HOST)),
                  pc.match_substring_regex(hosts, _NO_HOST))


def is_host_name(name: str | None) -> bool:
    """Whether ``name`` is a host name the lake stores (:func:`not_host_names` of one string). The answer for a name
    of at most :data:`MAX_HOST_CHARS` characters is kept for the process (an Arrow call compiles its RE2 pattern
    each time: ~0.1 ms, 5 % of a batch's CPU when every batch asked again for each of its hosts); a longer one is
    no host name and is not kept (distinct 200 KB Kafka keys held 400 MB: a break-it pass)."""
    return bool(name) and len(name) <= MAX_HOST_CHARS and _short_host_name(name)


@functools.lru_cache(maxsize=65536)
def _short_host_name(name: str) -> bool:
    return not not_host_names(pa.array([name], pa.string()))[0].as_py()


def close_hosts(host: str, seen: list[str]) -> list[str]:
    """The host names of ``seen`` that ``host`` (a ``diagnose --symptom`` host with no events, an API ``host`` the
    lake holds nothing of) was likely meant to be: those equal to it but for leading zeros in its numbers
    (``node07`` for ``node007``), else the closest by ``difflib`` among those with the same numbers (``node07`` for
    ``nodo07``; none for ``node99`` among node01 - node08)."""
    def unpadded(name: str) -> str:  # digits as text: int() refuses more than 4300 of them
        return re.sub(r"\d+", lambda m: m.group().lstrip("0") or "0", name.lower())

    same = [h for h in seen if unpadded(h) == unpadded(host)]
    # a name whose numbers differ is another host, however alike its letters ("Did you mean node08?" for node99:
    # a fresh-user trial): only names with the same numbers, or a letter's slip (nodo07), are offered
    digits = re.findall(r"\d+", unpadded(host))
    return same or difflib.get_close_matches(host, [h for h in seen if re.findall(r"\d+", unpadded(h)) == digits],
                                             n=1)

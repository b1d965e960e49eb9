"""MapReduce job configurations (``<jobid>_conf.xml``) -> resolved, redacted properties (fetchers.hadoop_conf)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from jhist_refdata import PI_0001, needs_refdata

from appmodel.redaction import REDACTED
from fetchers.hadoop_conf import (
    ConfBudget,
    ConfError,
    parse_conf_xml,
    read_conf_stream,
    read_conf_xml,
    resolve_and_redact,
    substitute,
)

# ---- configuration files --------------------------------------------------------------------------------------


def test_variables_expand_like_hadoop_leftmost_first_and_bounded() -> None:
    props = {"a": "${b}/x", "b": "${c}-y", "c": "z", "self": "<${self}>", "loose": "${nope}/${c}"}
    assert substitute("${a}", props) == ("z-y/x", ["a", "b", "c"], None)
    assert substitute("${self}", props) == ("${self}", ["self"], "${self}")
    # Hadoop stops at the first unbound variable and keeps what it expanded so far.
    assert substitute("${c}${nope}${c}", props) == ("z${nope}${c}", ["c"], "${nope}")
    chain = {f"v{i}": f"${{v{i + 1}}}" for i in range(30)}
    assert substitute("${v0}", chain)[2] == "depth"


def test_a_conf_with_unresolvable_variables_keeps_them_verbatim_with_one_warning() -> None:
    pairs = [("dir", "${base}/data"), ("base", "/srv/${who}"), ("loop", "${loop}x")]
    chain = [(f"v{i}", f"${{v{i + 1}}}") for i in range(25)] + [("v25", "end")]
    conf = resolve_and_redact(pairs + chain, name="job_conf.xml")
    assert conf.properties["dir"] == "/srv/${who}/data"
    assert conf.properties["loop"] == "${loop}x"
    assert conf.properties["v24"] == "end"
    assert conf.properties["v0"] == "${v1}"
    assert conf.unresolved == {"dir": "${who}", "base": "${who}", "loop": "${loop}"}
    assert any("3 value(s)" in w and "dir (${who})" in w for w in conf.warnings)
    assert any("deeper than 20" in w and "v0" in w for w in conf.warnings)


def test_secrets_in_a_conf_are_redacted_with_spark_hadoop_and_the_jobs_own_patterns() -> None:
    pairs = [
        ("fs.s3a.secret.key", "AKIAXXXX"),
        ("fs.azure.account.key.acct.blob.core.windows.net", "azkey"),
        ("ldap.bind.credential", "c"),
        ("javax.jdo.option.ConnectionPassword", "pw"),
        ("db.url", "jdbc:mysql://app:${javax.jdo.option.ConnectionPassword}@db/x"),
        ("hive.uri", "thrift://u:hunter2@metastore:9083"),
        ("hadoop.security.sensitive-config-keys", "secret$,my\\.private\\..*,[broken"),
        ("my.private.thing", "p"),
        ("mapreduce.map.memory.mb", "1024"),
    ]
    conf = resolve_and_redact(pairs, ["(?i)ldap"], name="c.xml")
    props = conf.properties
    for key in (
        "fs.s3a.secret.key",
        "fs.azure.account.key.acct.blob.core.windows.net",
        "ldap.bind.credential",
        "javax.jdo.option.ConnectionPassword",
        "db.url",  # built from a secret through ${...}
        "my.private.thing",  # the job's own hadoop.security.sensitive-config-keys
    ):
        assert props[key] == REDACTED, key
    assert props["hive.uri"] == f"thrift://u:{REDACTED}@metastore:9083"
    assert props["mapreduce.map.memory.mb"] == "1024"
    assert any("[broken" in w for w in conf.warnings)
    assert not any("hunter2" in v or "AKIA" in v for v in props.values())


def test_conf_xml_accepts_both_property_forms_and_the_last_definition_wins(tmp_path: Path) -> None:
    path = tmp_path / "job_1_0001_conf.xml"
    path.write_text(
        '<?xml version="1.0"?><configuration>'
        "<property><!--Loaded from job.xml--><name> a </name><value>1</value><source>job.xml</source></property>"
        '<property name="b" value="${a}2"/><property><name>a</name><value>3</value><final>true</final></property>'
        "<property><value>no name</value></property></configuration>"
    )
    assert read_conf_xml(path).properties == {"a": "3", "b": "32"}


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
            b"<configuration><property><name>a</name><value>&lol2;</value></property></configuration>",
            "document type",
        ),
        (b"<other/>", "not <configuration>"),
        (b"<configuration><property>", "not well-formed"),
    ],
)
def test_conf_xml_that_is_hostile_or_broken_is_refused(xml: bytes, message: str) -> None:
    with pytest.raises(ConfError, match=message):
        parse_conf_xml(io.BytesIO(xml))


@needs_refdata
def test_randomly_damaged_confs_are_read_or_refused_with_one_line(tmp_path: Path) -> None:
    import random

    data = bytearray((PI_0001.parent / "job_1526555215992_0001_conf.xml").read_bytes())
    rng = random.Random(7)
    path = tmp_path / "job_1_0001_conf.xml"
    refusals: list[str] = []
    for _ in range(40):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 10)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path.write_bytes(bytes(damaged))
        try:
            conf = read_conf_xml(path)
        except ConfError as exc:
            refusals.append(str(exc))
        else:
            assert len(conf.properties) <= 166
    assert refusals
    assert all("\n" not in message and message.startswith(path.name) for message in refusals)


@pytest.mark.timeout(10)
def test_a_catastrophic_sensitive_keys_pattern_in_a_job_conf_runs_in_linear_time() -> None:
    pairs = [("hadoop.security.sensitive-config-keys", "^(a|aa)+$"), ("a" * 40 + "b", "MARKER-7f3a"), ("a" * 40, "x")]

    props = resolve_and_redact(pairs, name="c.xml").properties  # Python's re takes ~30 s on the first key

    assert props["a" * 40 + "b"] == "MARKER-7f3a"
    assert props["a" * 40] == REDACTED


def test_a_sensitive_keys_pattern_re2_cannot_run_is_ignored_with_a_warning_and_the_defaults_still_apply() -> None:
    pairs = [
        ("hadoop.security.sensitive-config-keys", r"(?=corp)corp\.pin"),  # a lookahead: not RE2
        ("fs.azure.account.key.acme", "MARKER-7f3a"),
    ]

    conf = resolve_and_redact(pairs, name="c.xml")

    assert conf.properties["fs.azure.account.key.acme"] == REDACTED
    assert any("(?=corp)" in w and "hadoop.security.sensitive-config-keys" in w for w in conf.warnings)


# ---- budgets (issue 15, F5) ------------------------------------------------------------------------------------


def _conf_file(tmp_path: Path, pairs: list[tuple[str, str]]) -> Path:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in pairs)
    path = tmp_path / "job_1_0001_conf.xml"
    path.write_text(f"<?xml version='1.0'?><configuration>{body}</configuration>")
    return path


def test_a_conf_whose_references_would_make_a_value_huge_keeps_it_unexpanded_with_a_warning(tmp_path: Path) -> None:
    """F5: twenty references to a 100 kB property made each value 2 MB (old main: 40 MB for this 2.5 MB-free conf);
    a value that would grow past the per-value budget (1 MiB) is kept verbatim, the rest still expands."""
    bombs = [(f"bomb{i}", "${big}" * 20) for i in range(20)]
    path = _conf_file(tmp_path, [("big", "x" * 100_000), *bombs, ("dir", "/srv/${user}"), ("user", "ann")])

    conf = read_conf_xml(path)

    assert sum(len(v) for v in conf.properties.values()) < 110_000
    assert conf.properties["bomb0"] == "${big}" * 20
    assert conf.properties["dir"] == "/srv/ann"
    assert all(conf.properties[f"bomb{i}"] == "${big}" * 20 for i in range(20))
    assert any("longer than 1048576 characters, kept verbatim: bomb0" in w for w in conf.warnings)


def test_expansion_across_a_whole_conf_stops_at_the_files_budget_and_says_so(tmp_path: Path) -> None:
    """F5: every value may stay under the per-value budget and the file still blow up (old main: 32 MB for 40
    values of 800 kB); past the file's budget (16 MiB built) the remaining references are kept verbatim."""
    bombs = [(f"bomb{i:02d}", "${big}" * 20) for i in range(40)]
    path = _conf_file(tmp_path, [("big", "y" * 40_000), *bombs])

    conf = read_conf_xml(path)

    assert sum(len(v) for v in conf.properties.values()) <= (16 << 20) + 40_000 + 40 * 120
    assert conf.properties["bomb00"] == "y" * 800_000  # within the budgets, expanded as Hadoop would
    assert conf.properties["bomb39"] == "${big}" * 20
    assert any("budget of 16777216 characters, kept verbatim: bomb" in w and " more" in w for w in conf.warnings)


def test_a_conf_file_over_the_size_budget_is_refused_with_one_line(tmp_path: Path) -> None:
    path = _conf_file(tmp_path, [(f"k{i}", "v" * 100) for i in range(100)])
    budget = ConfBudget(max_file_bytes=4096)

    with pytest.raises(ConfError, match=r"^job_1_0001_conf.xml: \d+ bytes, larger than the limit of 4096"):
        read_conf_xml(path, budget=budget)
    with path.open("rb") as fh, pytest.raises(ConfError, match="larger than the limit of 4096 bytes"):
        read_conf_stream(fh, name=path.name, budget=budget)


def test_the_expansion_budgets_are_configurable_per_read() -> None:
    pairs = [("a", "0123456789"), ("b", "${a}${a}"), ("c", "${a}")]

    conf = resolve_and_redact(pairs, name="c.xml", budget=ConfBudget(max_value_chars=15, max_total_chars=1000))

    assert conf.properties == {"a": "0123456789", "b": "${a}${a}", "c": "0123456789"}
    assert any("longer than 15 characters" in w and ": b" in w for w in conf.warnings)


def test_a_job_confs_own_sensitive_keys_add_to_the_defaults_and_never_replace_them() -> None:
    pairs = [
        ("hadoop.security.sensitive-config-keys", r"corp\.vault\.pin$"),  # a shorter list than Hadoop's default
        ("corp.vault.pin", "MARKER-1"),
        ("fs.azure.account.key.acme", "MARKER-2"),
        ("ssl.keystore.pass", "MARKER-3"),
        ("corp.vault.pin.colour", "MARKER-4"),
    ]

    props = resolve_and_redact(pairs, name="c.xml").properties

    assert props["corp.vault.pin"] == props["fs.azure.account.key.acme"] == props["ssl.keystore.pass"] == REDACTED
    assert props["corp.vault.pin.colour"] == "MARKER-4"


def test_a_fifo_in_place_of_a_job_conf_is_refused_at_once_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """Issue 15 item 5: opened without blocking and checked on the descriptor (a stat first leaves a window)."""
    fifo = tmp_path / "job_1_conf.xml"
    os.mkfifo(fifo)

    with pytest.raises(ConfError, match="not a regular file"):
        read_conf_xml(fifo)

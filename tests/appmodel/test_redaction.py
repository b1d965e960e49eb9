"""Secrets in configuration values never reach the app model (appmodel.redaction)."""

from __future__ import annotations

import pytest

from appmodel.redaction import MAX_UNTRUSTED_PATTERN_CHARS, REDACTED, Redactor, compile_untrusted, redact_url_passwords


@pytest.mark.parametrize(
    "key",
    ["spark.ssl.keyPassword", "spark.hadoop.fs.s3a.secret.key", "spark.auth.TOKEN", "fs.s3a.access.key"],
)
def test_keys_matching_sparks_default_regex_are_redacted(key: str) -> None:
    assert Redactor().redact(key, "value") == REDACTED


def test_a_value_matching_sparks_default_regex_is_redacted_whatever_its_key() -> None:
    assert Redactor().redact("spark.some.conf", "user=bob;password=x") == REDACTED


def test_ordinary_properties_are_kept() -> None:
    assert Redactor().redact("spark.executor.memory", "4g") == "4g"
    assert Redactor().redact("spark.hadoop.fs.s3a.accesskey.path", "/x") == "/x"  # access[.]key needs the dot


def test_extra_patterns_match_keys_only() -> None:
    redactor = Redactor(["(?i)credential"])
    assert redactor.redact("spark.my.Credential", "abc") == REDACTED
    assert redactor.redact("spark.note", "credential rotation on Monday") == "credential rotation on Monday"


def test_an_invalid_extra_pattern_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"\[unclosed"):
        Redactor(["[unclosed"])


def test_the_apps_own_redaction_regex_adds_to_the_default() -> None:
    redactor = Redactor().with_app_regex("(?i)account")
    assert redactor.redact("spark.my.account", "x") == REDACTED
    assert redactor.redact("spark.other", "my account id") == REDACTED  # app regexes match values, as in Spark
    assert redactor.redact("spark.ssl.keyPassword", "x") == REDACTED


def test_an_invalid_app_regex_is_a_value_error_naming_the_property() -> None:
    with pytest.raises(ValueError, match=r"spark\.redaction\.regex"):
        Redactor().with_app_regex("(")


def test_only_secret_pairs_inside_java_options_are_redacted() -> None:
    redactor = Redactor(["(?i)internal"])
    options = '-Xmx2g -Dcorp.internal.cred="a b" -Dlog4j.configuration=x.properties -Dother=1'
    assert redactor.redact("spark.executor.extraJavaOptions", options) == (
        f"-Xmx2g -Dcorp.internal.cred={REDACTED} -Dlog4j.configuration=x.properties -Dother=1"
    )


def test_url_passwords_are_redacted_in_any_value_and_the_user_is_kept() -> None:
    value = "jdbc:mysql://etl:s3cr3t@db.example.com:3306/warehouse"
    redacted = Redactor().redact("spark.sql.catalog.url", value)
    assert "s3cr3t" not in redacted
    assert redacted.startswith("jdbc:mysql://etl:")
    assert redact_url_passwords("https://example.com/path@v2") == "https://example.com/path@v2"


def test_redact_pairs_builds_the_redacted_mapping() -> None:
    pairs = [("spark.app.name", "etl"), ("spark.ssl.keyStorePassword", "k")]
    assert Redactor().redact_pairs(pairs) == {"spark.app.name": "etl", "spark.ssl.keyStorePassword": REDACTED}


@pytest.mark.timeout(10)
def test_an_untrusted_pattern_runs_in_linear_time_on_a_catastrophic_input() -> None:
    pattern = compile_untrusted("^(a|aa)+$", "spark.redaction.regex")
    assert pattern.search("a" * 40 + "b") is None
    assert pattern.search("a" * 100_000) is not None


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?<=x)y", "x" * (MAX_UNTRUSTED_PATTERN_CHARS + 1), "(a{1000}){1000}"])
def test_an_untrusted_pattern_re2_cannot_run_or_too_long_is_a_value_error_naming_its_origin(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"spark\.redaction\.regex"):
        compile_untrusted(pattern, "spark.redaction.regex")


@pytest.mark.parametrize(
    "key",
    [
        "spark.hadoop.fs.azure.account.key.acme.dfs.core.windows.net",
        "spark.hadoop.fs.gs.auth.service.account.private.key",
        "spark.hadoop.fs.azure.sas.logs.acme.blob.core.windows.net",
        "spark.hadoop.fs.s3a.bucket.logs.session.token",
        "spark.hadoop.fs.s3a.bucket.logs.secret.key",
        "spark.hadoop.dfs.adls.oauth2.credential",
        "spark.hadoop.google.cloud.auth.service.account.credentials",
        "fs.azure.account.key.acme.blob.core.windows.net",
    ],
)
def test_cloud_store_secret_keys_are_redacted_with_or_without_the_spark_hadoop_prefix(key: str) -> None:
    assert Redactor().redact(key, "MARKER-7f3a") == REDACTED


def test_cloud_store_settings_that_are_not_secrets_are_kept() -> None:
    for key in ("spark.hadoop.fs.s3a.aws.credentials.provider", "spark.hadoop.fs.azure.account.auth.type"):
        assert Redactor().redact(key, "MARKER-7f3a") == "MARKER-7f3a", key


def test_a_configured_anchored_pattern_matches_a_spark_hadoop_key_with_the_prefix_stripped() -> None:
    assert Redactor([r"^corp\.vault\."]).redact("spark.hadoop.corp.vault.pin", "MARKER-7f3a") == REDACTED


def test_an_apps_own_sensitive_config_keys_add_to_the_defaults_and_never_replace_them() -> None:
    spark = [
        ("spark.hadoop.hadoop.security.sensitive-config-keys", r"corp\.vault\.pin$"),
        ("spark.hadoop.corp.vault.pin", "MARKER-1"),
        ("spark.hadoop.fs.azure.account.key.acme", "MARKER-2"),  # a default the app's list leaves out
        ("spark.corp.vault.colour", "MARKER-3"),
    ]
    hadoop = [("hadoop.security.sensitive-config-keys", r" billing\.api\.code$ ,"), ("billing.api.code", "MARKER-4")]

    redactor, warnings = Redactor().for_app(spark, hadoop)

    assert warnings == []
    assert redactor.redact("spark.hadoop.corp.vault.pin", "MARKER-1") == REDACTED
    assert redactor.redact("corp.vault.pin", "MARKER-1") == REDACTED
    assert redactor.redact("spark.hadoop.fs.azure.account.key.acme", "MARKER-2") == REDACTED
    assert redactor.redact("spark.corp.vault.colour", "MARKER-3") == "MARKER-3"
    assert redactor.redact("billing.api.code", "MARKER-4") == REDACTED
    assert redactor.redact("billing.api.code.len", "MARKER-4") == "MARKER-4"  # keys only, anchored as written
    assert Redactor().redact("billing.api.code", "MARKER-4") == "MARKER-4"  # the app's patterns stay with the app


def test_an_apps_sensitive_keys_that_re2_cannot_run_or_too_many_are_ignored_with_warnings() -> None:
    many = ",".join(f"corp\\.k{i}$" for i in range(150))
    spark = [("spark.hadoop.hadoop.security.sensitive-config-keys", r"(?=corp)corp\.pin,corp\.vault\.pin$")]

    redactor, warnings = Redactor().for_app(spark, [("hadoop.security.sensitive-config-keys", many)])

    assert redactor.redact("corp.vault.pin", "MARKER-1") == REDACTED
    assert redactor.redact("corp.k99", "MARKER-2") == REDACTED
    assert redactor.redact("corp.k120", "MARKER-3") == "MARKER-3"
    assert any("(?=corp)" in w and "spark.hadoop.hadoop.security.sensitive-config-keys" in w for w in warnings)
    assert any("150 patterns; only the first 100" in w for w in warnings)

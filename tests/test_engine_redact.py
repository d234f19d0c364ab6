"""Secrets: which keys are secret, redaction of configs and command lines, scrubbing of text."""

from __future__ import annotations

import pytest

from kbench.engine.redact import REDACTED, Scrubber, is_secret_property, redact, redact_argv


def test_secret_keys() -> None:
    for k in (
        "sasl.password",
        "ssl.key.password",
        "SASL.USERNAME",
        "sasl.oauthbearer.config",
        "my.client.secret",
        "ssl.keystore.password",
    ):
        assert is_secret_property(k), k
    for k in ("security.protocol", "bootstrap.servers", "compression.type", "ssl.ca.location"):
        assert not is_secret_property(k), k


def test_redact_nested_and_argv() -> None:
    cfg = {"client": {"sasl.password": "pw1", "security.protocol": "SASL_SSL"}, "list": [{"x.secret": "s2"}]}
    out = redact(cfg)
    assert out == {
        "client": {"sasl.password": REDACTED, "security.protocol": "SASL_SSL"},
        "list": [{"x.secret": REDACTED}],
    }
    assert cfg["client"]["sasl.password"] == "pw1"  # the input is not modified
    assert redact_argv(["run", "-X", "sasl.password=pw1", "-X", "acks=all"]) == [
        "run",
        "-X",
        f"sasl.password={REDACTED}",
        "-X",
        "acks=all",
    ]


def test_scrubber_removes_values_from_text() -> None:
    s = Scrubber.of({"sasl.password": "pw-123456", "sasl.username": "bobby-the-user"})
    assert s("auth failed for bobby-the-user with pw-123456") == f"auth failed for {REDACTED} with {REDACTED}"
    assert s.deep({"msg": "pw-123456", "sasl.password": "pw-123456"}) == {"msg": REDACTED, "sasl.password": REDACTED}


def test_short_password_is_redacted_as_a_value_never_as_a_word_of_other_text() -> None:
    """``sasl.password = "json"``: redacted under its key, after ``sasl.password=`` and in a URL,
    but the corpus named json stays json (issue 32)."""
    s = Scrubber.of({"sasl.password": "json"})
    assert s.deep({"sasl.password": "json", "corpus": "json"}) == {"sasl.password": REDACTED, "corpus": "json"}
    assert s("builtin:json:seed=1") == "builtin:json:seed=1"
    assert s("config sasl.password=json refused") == f"config sasl.password={REDACTED} refused"
    assert s('{"sasl.password": "json"}') == f'{{"sasl.password": "{REDACTED}"}}'
    assert s("http://u:json@h:1/m") == f"http://{REDACTED}@h:1/m"
    long = Scrubber.of({"sasl.password": "hunter2-json"})
    assert long("corpus hunter2-jsonl stays, hunter2-json goes") == f"corpus hunter2-jsonl stays, {REDACTED} goes"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("SASL_SSL://user:PW1@127.0.0.1:9", f"SASL_SSL://{REDACTED}@127.0.0.1:9"),
        ("--bootstrap user:PW1@host:9", f"--bootstrap {REDACTED}@host:9"),
        ("a:9,user:PW1@b:9", f"a:9,{REDACTED}@b:9"),
        ("http://admin:PW1@127.0.0.1:7/metrics", f"http://{REDACTED}@127.0.0.1:7/metrics"),
        ('"user:PW1@h:9"', f'"{REDACTED}@h:9"'),
    ],
)
def test_userinfo_is_a_secret_in_every_address_form(text: str, shown: str) -> None:
    assert redact(text) == shown
    assert (
        Scrubber.of({"transport": {"bootstrap": text}})(f"cannot reach {text}: refused")
        == f"cannot reach {shown}: refused"
    )


def test_url_credentials_are_redacted_in_configs_command_lines_and_text() -> None:
    url = "http://bench:Pa55-w0rd@broker-1:7071/metrics"
    shown = f"http://{REDACTED}@broker-1:7071/metrics"
    assert redact({"transport": {"broker_metrics": [url, "broker-2:7071"]}}) == {
        "transport": {"broker_metrics": [shown, "broker-2:7071"]}
    }
    assert redact_argv(["--broker-metrics", f"{url},http://h:1/m", f"--broker-metrics={url}"]) == [
        "--broker-metrics",
        f"{shown},http://h:1/m",
        f"--broker-metrics={shown}",
    ]
    # a password holding an unencoded '@' is all inside the user information (as urlsplit reads it)
    assert redact("GET https://u:p@ss@h/x failed") == f"GET https://{REDACTED}@h/x failed"
    s = Scrubber.of({"transport": {"broker_metrics": [url]}})
    assert s("auth with Pa55-w0rd refused") == f"auth with {REDACTED} refused"  # the value, wherever it appears
    assert s(f"scrape {url}: HTTP 401") == f"scrape {shown}: HTTP 401"
    assert s("user + system CPU") == "user + system CPU"  # a URL's user name is not scrubbed from other text
    assert redact("no credentials: http://h:1/metrics") == "no credentials: http://h:1/metrics"


def test_misspelled_password_looks_secret() -> None:
    assert is_secret_property("sasl.passwd") and is_secret_property("ssl.keystore.passwd")

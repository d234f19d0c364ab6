"""Secrets: which keys are secret, redaction of configs and command lines, scrubbing of text."""

from __future__ import annotations

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
    s = Scrubber.of({"sasl.password": "pw-123", "sasl.username": "bobby"})
    assert s("auth failed for bobby with pw-123") == f"auth failed for {REDACTED} with {REDACTED}"
    assert s.deep({"msg": "pw-123", "sasl.password": "pw-123"}) == {"msg": REDACTED, "sasl.password": REDACTED}

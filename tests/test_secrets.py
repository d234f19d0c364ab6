"""Secrets never reach a file, a log or a printed line: every secret property of librdkafka and
of the Java client, given through ``-X`` and through a plan's ``[client]``, on the ``dry``
transport (no Kafka needed); the C config path scrubs librdkafka's own error text; and a
one-character secret changes no other text.

The property lists below are written out by hand from librdkafka's CONFIGURATION.md (properties
marked sensitive, the OAuth/OIDC credentials) and from the Java client's configs (every
``Type.PASSWORD`` property), so that a change to the rule in ``csrc/core/secret.c`` that drops
one of them fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

from kbench.engine.redact import Scrubber, redact_argv
from kbench.kafka.clients import unknown_property
from kbench.kafka.drivers import KafkaError, ProducerSpec, produce
from kbench.kafka.secret import REDACTED, is_secret_property

ROOT = Path(__file__).resolve().parent.parent

#: librdkafka: properties its config table marks sensitive, plus the OAuth/OIDC credentials.
LIBRDKAFKA_SECRETS = (
    "sasl.username",
    "sasl.password",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.file",
    "sasl.kerberos.keytab",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl_key",
    "ssl.ca.pem",
    "ssl.keystore.location",
    "ssl.keystore.password",
)

#: The Java client: every Type.PASSWORD config of producer, consumer and admin (plus locations of private keys).
JAVA_SECRETS = (
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.file",
)

#: Other clients' credentials that travel with client properties, and prefixed forms.
OTHER_SECRETS = (
    "basic.auth.user.info",
    "schema.registry.basic.auth.user.info",
    "bearer.auth.token",
    "bearer.auth.client.secret",
    "producer.override.sasl.jaas.config",
    "SASL.PASSWORD",
)

ALL_SECRETS = tuple(dict.fromkeys(LIBRDKAFKA_SECRETS + JAVA_SECRETS + OTHER_SECRETS))

#: Public material and settings: shown as given (the manifest must say how the client was configured).
NOT_SECRET = (
    "bootstrap.servers",
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.kerberos.principal",
    "sasl.kerberos.service.name",
    "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.token.endpoint.url",
    "enable.sasl.oauthbearer.unsecure.jwt",
    "ssl.certificate.pem",
    "ssl.certificate.location",
    "ssl.ca.location",
    "ssl.truststore.location",
    "ssl.endpoint.identification.algorithm",
    "acks",
)

PLAN = """
name = "secrets"
repetitions = 1
duration_s = 0.2
min_window_s = 0
warmup_s = 0.05
corpus_size = 20000
seed = 11

[transport]
kind = "dry"

[client]
{client}

[[sweep]]
name = "fixed"
experiments = ["A", "C", "D"]
codec = ["none", "zstd:3"]
rate = 2000
client = "{driver}"
"""


def _value(i: int, name: str) -> str:
    """A distinctive value per property; a PEM block (several lines) for the PEM ones."""
    token = f"KbSeCrEt{i:03d}q7"
    if name.endswith((".pem", "ssl_key", "certificate.chain", "truststore.certificates", "keystore.key")):
        return f"-----BEGIN PRIVATE KEY-----\nMIIEv{token}AgEAMA0G\n-----END PRIVATE KEY-----"
    if "jaas" in name:
        return f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{token}";'
    return token


SECRET_VALUES = {name: _value(i, name) for i, name in enumerate(ALL_SECRETS)}
#: The secrets each client is given: librdkafka refuses names it does not know (kbench checks them
#: before anything is written; an older librdkafka lacks the newest OAuth names), the Java client
#: ignores them, so Java's, other clients' and the rest go there.
_LINKED = {k for k in LIBRDKAFKA_SECRETS if unknown_property("librdkafka", k) is None}
BY_CLIENT = {
    "librdkafka": {k: v for k, v in SECRET_VALUES.items() if k in _LINKED},
    "java": {k: v for k, v in SECRET_VALUES.items() if k not in _LINKED},
}


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def _kbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([KBENCH_PATH, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "kbench", *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=env
    )


def _leaks(texts: dict[str, str], values: dict[str, str]) -> list[str]:
    """(where, property) for every secret value (or its distinctive token) found in a text."""
    hits = []
    for where, text in texts.items():
        for name, v in values.items():
            token = v if "KbSeCrEt" not in v else v[v.index("KbSeCrEt") : v.index("KbSeCrEt") + 13]
            if v in text or token in text or json.dumps(v)[1:-1] in text:
                hits.append(f"{where}: {name}")
    return hits


def _files(*dirs: Path) -> dict[str, str]:
    return {
        str(f.relative_to(d.parent)): f.read_bytes().decode("utf-8", "replace")
        for d in dirs
        for f in sorted(d.rglob("*"))
        if f.is_file()
    }


def test_linked_librdkafka_takes_its_classic_secrets() -> None:
    assert {"sasl.username", "sasl.password", "ssl.key.password", "ssl.key.pem", "ssl_key"} <= _LINKED


def test_the_rule_covers_every_listed_secret_and_no_public_setting() -> None:
    assert [n for n in ALL_SECRETS if not is_secret_property(n)] == []
    assert [n for n in NOT_SECRET if is_secret_property(n)] == []


@pytest.mark.parametrize("driver", ["librdkafka", "java"])
@pytest.mark.parametrize("form", ["-X", "plan"])
def test_no_secret_reaches_a_file_or_a_printed_line(tmp_path: Path, form: str, driver: str) -> None:
    secrets = BY_CLIENT[driver]
    if form == "plan":
        client = "\n".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in secrets.items())
        extra: list[str] = []
    else:
        client = '"client.id" = "kbench-secrets-test"'
        extra = []
        for i, (k, v) in enumerate(secrets.items()):
            # both spellings argparse accepts: "-X k=v" and "-Xk=v"
            extra += ["-X", f"{k}={v}"] if i % 2 == 0 else [f"-X{k}={v}"]
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(client=client, driver=driver))
    run_dir, report_dir = tmp_path / "run", tmp_path / "report"
    run = _kbench("run", str(plan), "-o", str(run_dir), *extra, "--gate-sample-s", "0", "--force", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    rep = _kbench("report", str(run_dir), "-o", str(report_dir), "--no-plots", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr[-3000:]

    manifest = json.loads((run_dir / "manifest.json").read_text())
    # every secret did reach the client (so its absence below means redaction, not loss)
    assert {k: manifest["client_properties"].get(k) for k in secrets} == dict.fromkeys(secrets, REDACTED)
    files = _files(run_dir, report_dir)
    assert {"run/manifest.json", "run/A.csv", "report/report.md"} <= set(files)
    printed = {
        "run stdout": run.stdout,
        "run stderr": run.stderr,
        "report stdout": rep.stdout,
        "report stderr": rep.stderr,
    }
    assert _leaks({**files, **printed}, secrets) == []


@pytest.mark.parametrize("form", ["--broker-metrics", "plan"])
def test_metrics_url_credentials_reach_no_file_or_printed_line(tmp_path: Path, form: str) -> None:
    """``http://user:pw@host:port/metrics`` on the command line or in ``[transport] broker_metrics``:
    the password is in no file of the run or its report, nor in anything printed."""
    password = "KbSeCrEt777q7"
    url = f"http://bench:{password}@127.0.0.1:9/metrics"
    plan = tmp_path / "plan.toml"
    text = PLAN.format(client='"client.id" = "kbench-secrets-test"', driver="librdkafka")
    extra: list[str] = []
    if form == "plan":
        text = text.replace('kind = "dry"', f'kind = "dry"\nbroker_metrics = ["{url}"]')
    else:
        extra = ["--broker-metrics", url]
    plan.write_text(text)
    run_dir, report_dir = tmp_path / "run", tmp_path / "report"
    run = _kbench("run", str(plan), "-o", str(run_dir), *extra, "--gate-sample-s", "0", "--force", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    rep = _kbench("report", str(run_dir), "-o", str(report_dir), "--no-plots", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr[-3000:]
    manifest = (run_dir / "manifest.json").read_text()
    assert f"http://{REDACTED}@127.0.0.1:9/metrics" in manifest  # it says credentials were given
    texts = {**_files(run_dir, report_dir), "run": run.stdout + run.stderr, "report": rep.stdout + rep.stderr}
    assert _leaks(texts, {"url": password}) == []


def test_java_only_plan_redacts_secret_looking_names(tmp_path: Path) -> None:
    """The Java client's names are not checked (it ignores unknown ones), but a misspelled secret
    such as ``sasl.passwd`` is still never written in clear."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(client='"sasl.passwd" = "KbSeCrEt776q7"', driver="java"))
    run_dir = tmp_path / "run"
    r = _kbench("run", str(plan), "-o", str(run_dir), "--gate-sample-s", "0", "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((run_dir / "manifest.json").read_text())["client_properties"]["sasl.passwd"] == REDACTED
    assert _leaks({**_files(run_dir), "run": r.stdout + r.stderr}, {"sasl.passwd": "KbSeCrEt776q7"}) == []


def test_one_character_secret_changes_no_other_text(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(client='"sasl.username" = "e"\n"sasl.password" = "pw"', driver="librdkafka"))
    run_dir = tmp_path / "run"
    r = _kbench("run", str(plan), "-o", str(run_dir), "--gate-sample-s", "0", "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["client_properties"]["sasl.username"] == REDACTED
    assert manifest["plan"]["client"] == {"sasl.username": REDACTED, "sasl.password": REDACTED}
    rest = dict(manifest, client_properties=None, plan=dict(manifest["plan"], client=None))
    text = json.dumps(rest)
    assert REDACTED not in text
    assert "e" in json.dumps(manifest["gate"])  # the gate's text has the letter, and it survived


def test_scrubber_leaves_short_values_and_replaces_whole_long_ones() -> None:
    s = Scrubber.of({"sasl.username": "e", "sasl.password": "pw-12345", "acks": "all"})
    assert s("every e stays; pw-12345 goes; pw-123 stays") == f"every e stays; {REDACTED} goes; pw-123 stays"
    assert s.deep({"sasl.username": "e", "note": "see"}) == {"sasl.username": REDACTED, "note": "see"}


def test_command_line_forms_are_redacted() -> None:
    argv = ["kbench", "run", "p.toml", "-X", "ssl.key.pem=-----BEGIN=", "-Xsasl.password=a=b", "--client=ssl_key=k"]
    assert redact_argv([*argv, "-X", "acks=all"]) == [
        "kbench",
        "run",
        "p.toml",
        "-X",
        f"ssl.key.pem={REDACTED}",
        f"-Xsasl.password={REDACTED}",
        f"--client=ssl_key={REDACTED}",
        "-X",
        "acks=all",
    ]


def test_c_config_path_scrubs_librdkafkas_error_text() -> None:
    """librdkafka quotes a bad value in its error; when that value is also a secret's (pasted into the
    wrong property), the C config path replaces it before the message reaches Python."""
    value = "KbSeCrEt999q7"
    props = {"bootstrap.servers": "127.0.0.1:1", "sasl.password": value, "security.protocol": value}
    with pytest.raises(KafkaError) as ei:
        produce(ProducerSpec(topic="t", props=props, count=1, mode="saturated", connect_timeout=1), [b"x"])
    msg = str(ei.value)
    assert "security.protocol" in msg and REDACTED in msg  # librdkafka's text, value replaced
    assert value not in msg


def test_kbench_produce_prints_librdkafkas_error_without_the_secret(tmp_path: Path) -> None:
    value = "KbSeCrEt998q7"
    r = _kbench(
        "produce",
        "--bootstrap",
        "127.0.0.1:1",
        "--topic",
        "t",
        "--count",
        "1",
        "--mode",
        "saturated",
        "--connect-timeout",
        "1",
        "-X",
        f"sasl.password={value}",
        "-X",
        f"security.protocol={value}",
        cwd=tmp_path,
    )
    assert r.returncode != 0
    assert f'Invalid value "{REDACTED}" for configuration property "security.protocol"' in r.stderr
    assert value not in r.stdout + r.stderr

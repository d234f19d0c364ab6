"""The tier check (tests/markers.py, tests/conftest.py): a test that needs a broker, a JVM, Go, a
sanitizer build, a browser, the testbed or Dask and lacks its marker fails before its fixtures run."""

from __future__ import annotations

import tomllib
from pathlib import Path

import markers
import pytest

pytest_plugins = ("pytester",)

TESTS = Path(__file__).resolve().parent


# The functions below are read, never called: what they would start is what the check must see.
def _starts_a_broker(tmp: Path) -> None:
    from kbench.kafka.cluster import LocalCluster

    with LocalCluster(brokers=1, directory=tmp):
        pass


def _calls_a_helper_that_starts_a_broker(tmp: Path) -> None:
    _starts_a_broker(tmp)


def _builds_the_go_driver() -> None:
    from kbench.kafka import go_driver

    go_driver.build()


def _opens_a_testbed() -> None:
    from kbench.testbed import Testbed

    Testbed.create(None)  # type: ignore[arg-type]


def _sanitizer_build() -> list[str]:
    return ["cc", "-fsanitize=address,undefined"]


def _says_local_in_its_docstring() -> None:
    """A docstring that says transport="local" or kind = "local" starts nothing."""


def _real_kafka_report_run(root: Path) -> None:
    from report_runs import kafka_runs

    kafka_runs(root)


@pytest.mark.parametrize(
    ("fn", "needs"),
    [
        (_starts_a_broker, {"kafka"}),
        (_calls_a_helper_that_starts_a_broker, {"kafka"}),
        (_builds_the_go_driver, {"go"}),
        (_opens_a_testbed, {"testbed"}),
        (_sanitizer_build, {"sanitizer"}),
        (_says_local_in_its_docstring, set()),
        (_real_kafka_report_run, {"kafka"}),
    ],
)
def test_needs_are_read_from_the_code(fn: object, needs: set[str]) -> None:
    assert markers.Needs().of(fn) == needs  # type: ignore[arg-type]


def test_needs_are_read_from_the_fixtures() -> None:
    n = markers.Needs()
    assert markers.required(["kafka1", "tmp_path"], [], n) == {"kafka"}
    assert markers.required(["tmp_path"], [_says_local_in_its_docstring], n) == set()
    assert markers.required(["tmp_path"], [_builds_the_go_driver], n) == {"go"}


def test_every_tier_is_registered_in_pyproject() -> None:
    ini = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    registered = {line.split(":", 1)[0] for line in ini["markers"]}
    assert set(markers.TIERS) | {"slow"} == registered
    assert "--strict-markers" in ini["addopts"]  # a misspelled marker is an error, not a silent no-op


CHECKED = """
import pytest
from kbench.kafka.cluster import LocalCluster

STARTED = []


@pytest.fixture
def kafka1():  # stands in for the conftest's cluster: records that it was asked for
    STARTED.append(1)
    return "cluster"


def test_unmarked_fixture(kafka1):
    pass


@pytest.mark.kafka
def test_marked_fixture(kafka1):
    pass


def test_unmarked_call(tmp_path):
    if tmp_path is None:
        LocalCluster(brokers=1, directory=tmp_path).start()


@pytest.mark.kafka
def test_nothing_started_by_the_unmarked_ones():
    assert STARTED == [1]  # only the marked test's
"""


def test_an_unmarked_test_fails_before_its_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(markers=(TESTS / "markers.py").read_text())
    pytester.makepyfile(test_checked=CHECKED)
    pytester.makeini("[pytest]\nmarkers =\n    kafka: k\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*test_unmarked_fixture needs kafka but is not marked: add @pytest.mark.kafka*",
            "*test_unmarked_call needs kafka but is not marked: add @pytest.mark.kafka*",
        ]
    )
    # the fast tier's selection does not hide them: they are not marked, so they are selected and fail
    fast = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not kafka")
    fast.assert_outcomes(passed=0, errors=2, deselected=2)

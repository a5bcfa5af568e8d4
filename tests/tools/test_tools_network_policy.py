"""The `network` access kind (web_fetch): `ask` by default, `allow` (or `deny`) rules by domain,
a domain rule matching the host and the hosts under it and nothing else, narrowing layers and
session grants per host, and what a project file may not set (`[web]`)."""

import tomllib
from pathlib import Path

import pytest

from magi_code.config.trust import admit_project
from magi_code.tools.approvals import Asked
from magi_code.tools.base import Access
from magi_code.tools.grants import GrantedPolicy, SessionGrants
from magi_code.tools.policy import Policy, PolicyError

WS = Path("/work/project")


def net(host: str) -> Access:
    return Access("network", host=host)


def policy(text: str) -> Policy:
    return Policy.from_settings(tomllib.loads(text).get("permissions"))


def test_a_fetch_is_asked_about_by_default() -> None:
    for built in (Policy(), Policy.from_settings(None), Policy.from_settings({})):
        assert built.decide("web_fetch", net("example.com"), WS) == "ask"
    reads = Policy.from_settings({"default_read": "allow", "default_shell": "allow"})
    assert reads.decide("web_fetch", net("example.com"), WS) == "ask"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("example.com", "allow"),
        ("docs.example.com", "allow"),
        ("a.b.example.com", "allow"),
        ("DOCS.Example.COM.", "allow"),
        ("badexample.com", "ask"),
        ("example.com.evil.net", "ask"),
        ("example.org", "ask"),
    ],
)
def test_an_allow_rule_names_a_domain_and_the_hosts_under_it(host: str, expected: str) -> None:
    rules = policy(
        '[[permissions.rules]]\ntool = "web_fetch"\ndomain = "Example.com"\ndecision = "allow"\n'
    )
    assert rules.decide("web_fetch", net(host), WS) == expected


def test_a_domain_rule_matches_no_other_kind_and_other_rules_no_fetch() -> None:
    rules = policy(
        '[[permissions.rules]]\ndomain = "example.com"\ndecision = "allow"\n'
        '[[permissions.rules]]\npath = "**"\ndecision = "allow"\n'
        '[[permissions.rules]]\ncommand = "*"\ndecision = "allow"\n'
    )
    assert rules.decide("write_file", Access("write", (WS / "a",)), WS) == "allow"  # the path rule
    assert rules.decide("web_fetch", net("example.org"), WS) == "ask"  # neither path nor command
    only_domain = policy('[[permissions.rules]]\ndomain = "example.com"\ndecision = "allow"\n')
    assert only_domain.decide("write_file", Access("write", (WS / "a",)), WS) == "ask"
    assert only_domain.decide("shell", Access("shell", (), "curl example.com"), WS) == "ask"


def test_the_first_matching_rule_decides_and_deny_holds() -> None:
    rules = policy(
        '[[permissions.rules]]\ndomain = "internal.example.com"\ndecision = "deny"\n'
        '[[permissions.rules]]\ndomain = "example.com"\ndecision = "allow"\n'
    )
    assert rules.decide("web_fetch", net("x.internal.example.com"), WS) == "deny"
    assert rules.decide("web_fetch", net("www.example.com"), WS) == "allow"
    everything = policy('[[permissions.rules]]\ntool = "web_fetch"\ndecision = "allow"\n')
    assert everything.decide("web_fetch", net("anything.test"), WS) == "allow"


@pytest.mark.parametrize(
    "domain", ["", ".", "https://example.com", "example.com/x", "a b", "*.example.com", 7]
)
def test_a_domain_that_names_no_host_is_refused(domain: object) -> None:
    with pytest.raises(PolicyError):
        Policy.from_settings({"rules": [{"domain": domain, "decision": "allow"}]})


def test_a_projects_narrowing_rules_by_domain_only_narrow() -> None:
    base = Policy.from_settings(
        {
            "rules": [{"domain": "example.com", "decision": "allow"}],
            "project_rules": [{"domain": "example.com", "decision": "deny"}],
        }
    )
    assert base.decide("web_fetch", net("example.com"), WS) == "deny"
    with pytest.raises(PolicyError):  # a project never allows
        Policy.from_settings({"project_rules": [{"domain": "example.com", "decision": "allow"}]})


def test_a_session_grant_covers_that_host_only() -> None:
    grants = SessionGrants()
    granted = GrantedPolicy.over(Policy(), grants)
    assert granted.decide("web_fetch", net("example.com"), WS) == "ask"
    grants.grant(Asked("web_fetch", net("example.com"), '{"url": "https://example.com/a"}'))
    assert granted.decide("web_fetch", net("example.com"), WS) == "allow"
    assert granted.decide("web_fetch", net("other.example.com"), WS) == "ask"
    assert granted.decide("web_fetch", net("example.org"), WS) == "ask"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_file_never_sets_the_web_table(trusted: bool) -> None:
    kept, dropped = admit_project(
        {"web": {"allow_private": True, "search": True}}, {}, trusted, "p"
    )
    assert "web" not in kept
    assert [d.key for d in dropped] == ["web"]

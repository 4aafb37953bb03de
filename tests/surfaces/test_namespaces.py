"""NamespaceTemplate: templates, the identity rule, Runtime.context, bad values."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel
from typing_extensions import TypedDict

from langmem_ext.engine import NamespaceTemplate, resolve_identity
from langmem_ext.errors import ConfigurationError, LangmemError


def cfg(**values):
    return {"configurable": values}


def test_template_filled_from_configurable():
    assert NamespaceTemplate(("{user_id}", "memories"))(cfg(user_id="ada")) == ("ada", "memories")


def test_values_are_coerced_to_str():
    u = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")
    ns = NamespaceTemplate(("{org}", "{user_id}"))(cfg(org=7, user_id=u))
    assert ns == ("7", str(u))


def test_label_may_mix_text_and_placeholders():
    assert NamespaceTemplate(("team-{team_id}",))(cfg(team_id="x")) == ("team-x",)


def test_fixed_namespace_and_string_template():
    assert NamespaceTemplate(("memories",))(cfg()) == ("memories",)
    assert NamespaceTemplate("memories")() == ("memories",)


def test_missing_key_names_key_and_available_keys():
    with pytest.raises(ConfigurationError) as e:
        NamespaceTemplate(("{user_id}", "memories"))(cfg(thread_id="t1", org_id="acme"))
    msg = str(e.value)
    assert "'user_id'" in msg and "['org_id', 'thread_id']" in msg
    # an Exception (LangMem's is a BaseException), and a ValueError for callers
    assert isinstance(e.value, Exception) and isinstance(e.value, ValueError)
    assert isinstance(e.value, LangmemError)


def test_missing_key_outside_any_graph_is_configuration_error_not_keyerror():
    with pytest.raises(ConfigurationError, match="available keys: \\[\\]"):
        NamespaceTemplate(("{user_id}",))()


def test_none_counts_as_missing():
    with pytest.raises(ConfigurationError, match="missing key 'user_id'"):
        NamespaceTemplate(("{user_id}",))(cfg(user_id=None))


@dataclasses.dataclass
class DataCtx:
    user_id: str


class ModelCtx(BaseModel):
    user_id: int


@pytest.mark.parametrize(
    "context",
    [{"user_id": "u-9"}, DataCtx("u-9"), ModelCtx(user_id=9)],
    ids=["dict", "dataclass", "pydantic"],
)
def test_context_supplies_keys(context):
    got = NamespaceTemplate(("{user_id}", "m"))(cfg(), context=context)
    assert got == (str(getattr(context, "user_id", None) or context["user_id"]), "m")


def test_context_missing_key_lists_context_fields():
    with pytest.raises(ConfigurationError, match=r"available keys: \['user_id'\]"):
        NamespaceTemplate(("{org_id}",))(cfg(), context=DataCtx("u"))


def test_conflicting_sources_rejected():
    with pytest.raises(ConfigurationError, match="differs"):
        NamespaceTemplate(("{user_id}",))(cfg(user_id="a"), context={"user_id": "b"})
    # the same value in both places is fine (7 and "7" are the same label)
    assert NamespaceTemplate(("{user_id}",))(cfg(user_id=7), context={"user_id": "7"}) == ("7",)


def test_runtime_context_read_inside_a_graph():
    class S(TypedDict):
        ns: tuple

    template = NamespaceTemplate(("{user_id}", "memories"))

    def node(state):
        return {"ns": template()}  # no config passed: taken from the running graph

    graph = StateGraph(S, context_schema=DataCtx).add_node("n", node)
    graph = graph.add_edge(START, "n").add_edge("n", END).compile()
    assert graph.invoke({"ns": ()}, context=DataCtx("ctx-user"))["ns"] == ("ctx-user", "memories")
    assert graph.invoke({"ns": ()}, cfg(user_id=5))["ns"] == ("5", "memories")


# -- identity rule (seed 000) --------------------------------------------------------


@pytest.mark.parametrize(
    "identity, expected",
    [
        ({"user_id": "u-123"}, ("user", "u-123")),
        ({"org_id": "acme", "agent_id": "alpha"}, ("org", "acme", "alpha")),
        ({"org_id": "acme"}, ("org", "acme")),
        ({"agent_id": "alpha"}, ("agent", "alpha")),
        ({"org_id": "acme", "user_id": "u-1"}, ("org", "acme", "user", "u-1")),
        ({"user_id": "u-1", "agent_id": "alpha"}, ("user", "u-1", "alpha")),
        (
            {"org_id": "acme", "user_id": "u-1", "agent_id": "alpha"},
            ("org", "acme", "user", "u-1", "alpha"),
        ),
    ],
)
def test_identity_rule(identity, expected):
    assert NamespaceTemplate()(cfg(**identity)) == expected
    assert resolve_identity(identity) == expected


def test_identity_org_user_and_org_agent_never_collide():
    user = NamespaceTemplate()(cfg(org_id="acme", user_id="alpha"))
    agent = NamespaceTemplate()(cfg(org_id="acme", agent_id="alpha"))
    assert user != agent and user[: len(agent)] != agent and agent[: len(user)] != user


def test_identity_from_runtime_context():
    assert NamespaceTemplate()(cfg(), context=DataCtx("u-123")) == ("user", "u-123")


def test_no_identity_is_a_clear_error():
    with pytest.raises(
        ConfigurationError, match=r"org_id, user_id, agent_id.*available keys: \['thread_id'\]"
    ):
        NamespaceTemplate()(cfg(thread_id="t"))


@pytest.mark.parametrize("value", ["user", "org", "agent"])
def test_scope_labels_are_reserved_identity_values(value):
    with pytest.raises(ConfigurationError, match="reserved"):
        NamespaceTemplate()(cfg(org_id="acme", agent_id=value))


# -- invalid values ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, match",
    [
        ("", "empty"),
        ("   ", "empty"),
        (" u1", "whitespace"),
        ("a.b", "contains '.'"),
        ("../u-2", "contains '.'"),
        ("..", "contains '.'"),
        ("u\x001", "control"),
        (True, "must be a string"),
        (1.5, "must be a string"),
        ({"id": 1}, "must be a string"),
        (["u"], "must be a string"),
    ],
)
@pytest.mark.parametrize(
    "template", [("{user_id}", "memories"), None], ids=["template", "identity"]
)
def test_invalid_values_rejected_naming_the_key(value, match, template):
    with pytest.raises(ConfigurationError, match=match) as e:
        NamespaceTemplate(template)(cfg(user_id=value))
    assert "user_id" in str(e.value)


@pytest.mark.parametrize(
    "template, match",
    [
        ((), "empty"),
        (("",), "empty"),
        (("a.b",), "'.'"),
        (("{user_id!r}",), "plain names"),
        (("{}",), "plain names"),
        (("{a:>3}",), "plain names"),
    ],
)
def test_bad_templates_rejected_at_construction(template, match):
    with pytest.raises(ConfigurationError, match=match):
        NamespaceTemplate(template)


def test_template_copy_and_keys():
    t = NamespaceTemplate(("org", "{org_id}", "{user_id}", "agent-{agent_id}"))
    assert NamespaceTemplate(t).template == t.template
    assert t.keys == ("org_id", "user_id", "agent_id")
    assert NamespaceTemplate().keys == ("org_id", "user_id", "agent_id")


def test_a_label_holds_one_id_at_most():
    with pytest.raises(ConfigurationError, match=r"holds 2 ids \(org_id, user_id\).*own"):
        NamespaceTemplate(("{org_id}-{user_id}",))
    # the same id twice cannot run into another
    assert NamespaceTemplate(("{user_id}-{user_id}",))(cfg(user_id="a")) == ("a-a",)


@pytest.mark.parametrize(
    "template, value", [(("t{user_id}", "x"), "enant"), (("_{user_id}", "x"), "meta")]
)
def test_a_filled_template_never_starts_with_a_reserved_label(template, value):
    with pytest.raises(ConfigurationError, match="reserved for the memory layout"):
        NamespaceTemplate(template)(cfg(user_id=value))
    assert NamespaceTemplate(template)(cfg(user_id="ada"))[1] == "x"

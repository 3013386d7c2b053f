"""A small evaluator of AWS IAM policy JSON: a stand-in for AWS's authorization engine,
which no emulator here enforces (LocalStack stores bucket policies but ignores them).

It implements exactly the grammar our policies use (Effect, Principal "*" or AWS ARNs,
Action/NotAction, Resource/NotResource with `*`/`?` wildcards, and the condition operators
Bool, Null, StringEquals, StringNotEquals, StringLike, ArnLike, ArnNotLike) and refuses
anything else loudly, so a policy that grows past it makes the test fail rather than
pass by accident. Decision order as AWS documents it for a principal of the bucket's own
account: an explicit Deny in any policy wins; else an Allow in an identity policy or in
the bucket policy allows; else the request is implicitly denied.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

OPERATORS = {"Bool", "Null", "StringEquals", "StringNotEquals", "StringLike", "ArnLike", "ArnNotLike"}
STATEMENT_KEYS = {"Sid", "Effect", "Principal", "Action", "NotAction", "Resource", "NotResource", "Condition"}


@dataclass
class Request:
    principal: str
    action: str
    resource: str
    # Condition keys of the request (aws:SecureTransport, s3:if-none-match, ...).
    context: dict[str, str] = field(default_factory=dict)


@dataclass
class Decision:
    effect: str  # "Allow", "ExplicitDeny" or "ImplicitDeny"
    sid: str | None = None  # the deciding statement

    def __str__(self) -> str:
        return f"{self.effect} ({self.sid})" if self.sid else self.effect


def _list(x) -> list:
    return x if isinstance(x, list) else [x]


def _wildcard(pattern: str, value: str, ignore_case: bool = False) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.IGNORECASE if ignore_case else 0) is not None


def _conditions_hold(condition: dict, context: dict[str, str]) -> bool:
    ctx = {k.lower(): v for k, v in context.items()}
    for op, entries in condition.items():
        if op not in OPERATORS:
            raise ValueError(f"condition operator {op} is not implemented by this evaluator")
        for key, values in entries.items():
            values = [str(v) for v in _list(values)]
            present = key.lower() in ctx
            value = ctx.get(key.lower())
            if op == "Null":
                ok = any((v.lower() == "true") == (not present) for v in values)
            elif not present:
                # A missing key never matches a positive operator; negated ones match.
                ok = op in ("StringNotEquals", "ArnNotLike")
            elif op == "Bool":
                ok = any(v.lower() == str(value).lower() for v in values)
            elif op == "StringEquals":
                ok = value in values
            elif op == "StringNotEquals":
                ok = value not in values
            elif op in ("StringLike", "ArnLike"):
                ok = any(_wildcard(v, value) for v in values)
            else:  # ArnNotLike
                ok = not any(_wildcard(v, value) for v in values)
            if not ok:
                return False
    return True


def _principal_matches(principal, arn: str) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, dict) and set(principal) == {"AWS"}:
        return any(p == "*" or p == arn for p in _list(principal["AWS"]))
    raise ValueError(f"principal {principal!r} is not implemented by this evaluator")


def _applies(st: dict, req: Request, resource_policy: bool) -> bool:
    unknown = set(st) - STATEMENT_KEYS
    if unknown:
        raise ValueError(f"statement keys {sorted(unknown)} are not implemented by this evaluator")
    if resource_policy and not _principal_matches(st.get("Principal"), req.principal):
        return False
    if "Action" in st:
        if not any(_wildcard(a, req.action, ignore_case=True) for a in _list(st["Action"])):
            return False
    elif any(_wildcard(a, req.action, ignore_case=True) for a in _list(st["NotAction"])):
        return False
    if "Resource" in st:
        if not any(_wildcard(r, req.resource) for r in _list(st["Resource"])):
            return False
    elif any(_wildcard(r, req.resource) for r in _list(st["NotResource"])):
        return False
    return _conditions_hold(st.get("Condition", {}), req.context)


def statements(policy: str | dict) -> list[dict]:
    doc = json.loads(policy) if isinstance(policy, str) else policy
    return _list(doc["Statement"])


def decide(req: Request, identity_policies: list, bucket_policy) -> Decision:
    """The decision for a principal of the bucket's own account."""
    applicable = [(st, False) for p in identity_policies for st in statements(p)]
    applicable += [(st, True) for st in statements(bucket_policy)]
    matching = [st for st, is_resource in applicable if _applies(st, req, is_resource)]
    for st in matching:
        if st["Effect"] == "Deny":
            return Decision("ExplicitDeny", st.get("Sid"))
    for st in matching:
        if st["Effect"] == "Allow":
            return Decision("Allow", st.get("Sid"))
    return Decision("ImplicitDeny")

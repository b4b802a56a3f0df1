"""schemathesis hooks for backend/tests/api/faults/fuzz.rs (loaded by
SCHEMATHESIS_HOOKS=fuzz_hooks).

Keeps the fuzzing on loopback. A connector URL the fuzzer writes would be
dialled by the server when its host is a public IP literal (host names
resolve to nothing in that test), so such a host is replaced by a
documentation address, which the SSRF guard refuses before any connection.
Everything else the fuzzer generates is sent as generated.
"""

import ipaddress
import urllib.parse

import schemathesis

# TEST-NET-3 (RFC 5737): never public, refused by the SSRF guard.
REFUSED = "203.0.113.7"


def _public_literal(url):
    """Whether `url`'s host is an IP literal of a public address."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    host = urllib.parse.unquote(host).strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(host).is_global
    except ValueError:
        return False


def _tame(value):
    """`value` with every public-literal URL string in it replaced."""
    if isinstance(value, str) and _public_literal(value):
        return f"https://{REFUSED}/"
    if isinstance(value, dict):
        return {k: _tame(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tame(v) for v in value]
    return value


@schemathesis.hook
def before_call(context, case, kwargs):
    if isinstance(case.body, (dict, list, str)):
        case.body = _tame(case.body)

"""What the two HTTP servers (the memory browser, the MCP server) accept from
a web browser: the host names they answer to and the sites that may send them
state-changing requests.

A server on 127.0.0.1 is not private to this machine's own pages: any web page
can make the browser send requests to it, and a page whose domain is made to
resolve to 127.0.0.1 (DNS rebinding) can even read the answers. Two checks
stop that:

* **Host**: only the names the server is meant to be reached by are answered
  (loopback names and the bound address by default; a reverse proxy's name when
  configured). A rebinding page's requests carry its own domain and are refused.
* **Origin**: a state-changing request (POST …) sent by a page of another site
  is refused, including sign-in, so no page can make the browser act, or sign
  in, as someone else.

Examples:
    >>> allowed_hosts("127.0.0.1")
    ['127.0.0.1', 'localhost', '::1']
    >>> allowed_hosts("0.0.0.0", ["memory.example.com"])
    ['127.0.0.1', 'localhost', '::1', 'memory.example.com']
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import ConfigurationError

__all__ = ["LOOPBACK", "SameSiteOnly", "allowed_hosts", "allowed_origins", "check_host_names"]

#: Names that always mean this machine (a page cannot make them resolve elsewhere).
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Addresses that bind every interface: they name no host to accept.
_ANY = ("0.0.0.0", "::", "")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def check_host_names(names: Sequence[str]) -> list[str]:
    """Host names as given to ``allowed_hosts=`` (no scheme, port or path;
    ``*.example.com`` for every subdomain)."""
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ConfigurationError(
            f"allowed_hosts must be a list of host names such as ['memory.example.com'], "
            f"got {names!r}"
        )
    out = []
    for name in names:
        host = name.strip().lower()
        bad_wildcard = "*" in host[1:] or (host.startswith("*") and not host.startswith("*."))
        if not host or "/" in host or bad_wildcard or host == "*":
            raise ConfigurationError(
                f"{name!r} is not a host name: give names such as 'memory.example.com' or "
                "'*.example.com', without scheme, port or path"
            )
        out.append(host)
    return out


def allowed_hosts(bound: str, extra: Sequence[str] = ()) -> list[str]:
    """The host names a server bound to ``bound`` answers: the loopback names,
    the bound address itself (unless it binds every interface), and ``extra``
    (e.g. the name a reverse proxy forwards)."""
    names = [*LOOPBACK]
    host = bound.strip().lower().strip("[]")
    if host not in _ANY:
        names.append(host)
    names += check_host_names(extra)
    return list(dict.fromkeys(names))


def allowed_origins(hosts: Sequence[str]) -> list[str]:
    """Origins (``scheme://host:*``) of pages served under ``hosts``, in the MCP
    SDK's pattern syntax."""
    out = []
    for host in hosts:
        shown = f"[{host}]" if ":" in host else host
        out += [f"http://{shown}:*", f"https://{shown}:*", f"http://{shown}", f"https://{shown}"]
    return out


def _host_allowed(host: str, hosts: Sequence[str]) -> bool:
    host = host.lower()
    return any(host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in hosts)


class SameSiteOnly:
    """ASGI middleware: answer only ``hosts``, and refuse state-changing
    requests that a page of another site sent.

    A request with another ``Host`` gets 421 (as the MCP SDK answers); a POST
    whose ``Origin`` is not one of ``hosts``, or that the browser marks as
    cross-site (``Sec-Fetch-Site``), gets 403. Clients that are not browsers
    send neither header and are not affected.
    """

    def __init__(self, app: ASGIApp, hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts = [h.lower() for h in hosts]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = urlsplit("//" + headers.get("host", "")).hostname or ""
        if not _host_allowed(host, self.hosts):
            response = PlainTextResponse(
                "This server does not answer to this host name. If it is behind a proxy, "
                "start it with --allowed-host <the proxy's host name>.",
                status_code=421,
            )
            await response(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] not in _SAFE_METHODS:
            origin = headers.get("origin")
            site = headers.get("sec-fetch-site")
            foreign_origin = origin is not None and not _host_allowed(
                urlsplit(origin).hostname or "", self.hosts
            )
            if foreign_origin or site not in (None, "same-origin", "none"):
                response = PlainTextResponse(
                    "Refused: this request came from another site's page.", status_code=403
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

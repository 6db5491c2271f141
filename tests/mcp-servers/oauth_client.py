#!/usr/bin/env python3
"""An MCP client that authenticates the way real clients do, for the
`chainbox serve --auth-issuer ...` end-to-end tests: the official MCP Python
SDK (PyPI `mcp`, pinned in requirements.txt next to this file, installed by
.ci/run into the virtualenv target/pyclients) with its own OAuth support for
the client-credentials grant, `ClientCredentialsOAuthProvider`.

Nothing here fetches a token by hand: the SDK sends the request without a
token, reads the 401's `WWW-Authenticate: Bearer resource_metadata="..."`,
fetches the RFC 9728 protected-resource metadata, checks its `resource`
against --server, takes the first of its `authorization_servers` (or the
one equal to --issuer), fetches that server's RFC 8414 metadata, asks its
token endpoint for a token with `resource=<the metadata's resource>`, and
retries with `Authorization: Bearer`. So a passing test shows chainbox's 401
and metadata are what a real client needs.

Usage (with target/pyclients/bin/python):
  oauth_client.py --server http://127.0.0.1:PORT/mcp --client-id alice
      --client-secret alice-secret [--issuer http://127.0.0.1:ASPORT]
      [--scope "chainbox:run"] [--auth-method basic|post]
      [--mode auto|legacy|2026-07-28] --code 'SCRIPT'

Calls the tool `run_chain` with {"code": SCRIPT} and prints one JSON line:
  {"is_error": bool, "structured": <structuredContent>, "text": <first text>}
On an exception it prints {"exception": "<type>: <message>"} and exits 1.

--scope is only the scope asked for before any challenge: the SDK replaces
it with the `scope` of the 401's WWW-Authenticate (else the metadata's
scopes_supported), as the MCP spec says. --issuer names the authorization
server the credentials belong to; without it the SDK warns (deprecated) and
uses whichever server chainbox's metadata lists first.
"""

import argparse
import asyncio
import json
import sys

import httpx2
from mcp.client import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class MemoryTokenStorage:
    """The SDK's TokenStorage protocol, in memory: each run is one
    principal's fresh session, and nothing is left on disk between tests."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def first_leaf(exc: BaseException) -> BaseException:
    """The SDK runs its transport in an anyio task group, so a failure (a
    refused token, a 403) arrives wrapped in exception groups: report the
    error itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def run(args: argparse.Namespace) -> dict:
    auth = ClientCredentialsOAuthProvider(
        server_url=args.server,
        storage=MemoryTokenStorage(),
        client_id=args.client_id,
        client_secret=args.client_secret,
        token_endpoint_auth_method=f"client_secret_{args.auth_method}",
        scope=args.scope,
        issuer=args.issuer,
    )
    http_client: httpx2.AsyncClient = create_mcp_http_client(auth=auth)
    async with http_client:
        transport = streamable_http_client(args.server, http_client=http_client)
        async with Client(transport, mode=args.mode) as client:
            result = await client.call_tool("run_chain", {"code": args.code})
    text = next((block.text for block in result.content if getattr(block, "type", None) == "text"), None)
    return {"is_error": result.is_error, "structured": result.structured_content, "text": text}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="the MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", required=True)
    parser.add_argument("--issuer", help="the authorization server's issuer the credentials belong to")
    parser.add_argument("--scope", help="scope to ask for when no challenge names one")
    parser.add_argument("--auth-method", choices=["basic", "post"], default="basic")
    parser.add_argument("--mode", default="auto", help="the SDK's Client mode: auto, legacy or a protocol version")
    parser.add_argument("--code", required=True, help="the Python script run_chain runs")
    args = parser.parse_args()
    try:
        out = asyncio.run(run(args))
    except BaseException as exc:  # noqa: BLE001 - the test reads what went wrong
        if isinstance(exc, KeyboardInterrupt):
            raise
        leaf = first_leaf(exc)
        print(json.dumps({"exception": f"{type(leaf).__name__}: {leaf}"}), flush=True)
        return 1
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

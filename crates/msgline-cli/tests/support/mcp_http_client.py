"""An assistant's side of MCP over HTTP, with the official MCP Python SDK's streamable HTTP client.

    python mcp_http_client.py URL KEY TO

Initializes a session with `Authorization: Bearer KEY`, lists the tools, calls send_message twice
with one idempotency key, then get_message, and prints one JSON object with what it saw. A session
the server refuses prints {"refused": "<what the SDK raised>"}.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def text_of(result):
    return {"error": bool(result.is_error), "json": json.loads(result.content[0].text)}


async def session_run(url, key, to):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                arguments = {"to": to, "body": "Hello over HTTP", "idempotency_key": "mcp-http-1"}
                sent = text_of(await session.call_tool("send_message", arguments))
                again = text_of(await session.call_tool("send_message", arguments))
                message_id = sent["json"].get("message", {}).get("id")
                read_back = text_of(await session.call_tool("get_message", {"id": message_id or "msg_none"}))
                return {
                    "server": {"name": init.server_info.name, "version": init.server_info.version},
                    "tools": sorted(tool.name for tool in tools.tools),
                    "sent": sent,
                    "again": again,
                    "read": read_back,
                }


def describe(error):
    # The SDK raises from task groups: the first leaf says what happened.
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


def main():
    url, key, to = sys.argv[1:4]
    try:
        outcome = asyncio.run(asyncio.wait_for(session_run(url, key, to), timeout=60))
    except Exception as error:  # noqa: BLE001 - what the SDK raised is the answer
        outcome = {"refused": describe(error)}
    print(json.dumps(outcome))


if __name__ == "__main__":
    main()

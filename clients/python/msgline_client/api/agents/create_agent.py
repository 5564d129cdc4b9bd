from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.agent import Agent
from ...models.agent_fields import AgentFields
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    *,
    body: AgentFields,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/agents",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Agent | Error | None:
    if response.status_code == 201:
        response_201 = Agent.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Agent | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: AgentFields,
) -> Response[Agent | Error]:
    """Create a hosted agent that answers inbound messages on a line.

    Args:
        body (AgentFields): An agent's fields: all of them to create one (`name`, `instructions`
            and, unless the key is
            line-bound, `line_id` required), any of them to change one. Example: {'instructions': 'You
            answer questions about opening hours.', 'line_id': 'line_...', 'name': 'Ava'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Agent | Error]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: AgentFields,
) -> Agent | Error | None:
    """Create a hosted agent that answers inbound messages on a line.

    Args:
        body (AgentFields): An agent's fields: all of them to create one (`name`, `instructions`
            and, unless the key is
            line-bound, `line_id` required), any of them to change one. Example: {'instructions': 'You
            answer questions about opening hours.', 'line_id': 'line_...', 'name': 'Ava'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Agent | Error
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: AgentFields,
) -> Response[Agent | Error]:
    """Create a hosted agent that answers inbound messages on a line.

    Args:
        body (AgentFields): An agent's fields: all of them to create one (`name`, `instructions`
            and, unless the key is
            line-bound, `line_id` required), any of them to change one. Example: {'instructions': 'You
            answer questions about opening hours.', 'line_id': 'line_...', 'name': 'Ava'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Agent | Error]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: AgentFields,
) -> Agent | Error | None:
    """Create a hosted agent that answers inbound messages on a line.

    Args:
        body (AgentFields): An agent's fields: all of them to create one (`name`, `instructions`
            and, unless the key is
            line-bound, `line_id` required), any of them to change one. Example: {'instructions': 'You
            answer questions about opening hours.', 'line_id': 'line_...', 'name': 'Ava'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Agent | Error
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed

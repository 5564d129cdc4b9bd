from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.pool import Pool
from ...models.pool_fields import PoolFields
from ...types import Response


def _get_kwargs(
    *,
    body: PoolFields,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/pools",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Pool | None:
    if response.status_code == 201:
        response_201 = Pool.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Pool]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: PoolFields,
) -> Response[Error | Pool]:
    """Create a sender pool.

     A send that names `pool_id` goes out on the contact's line in the pool (its latest
    conversation's), or for a new contact on the pool's line with the most of today's budget
    left. A message waiting on a pool line that has been paused, flagged or offline for
    `failover_after_seconds` moves to another active line of the pool, if no line has been handed it.

    Args:
        body (PoolFields): `POST /pools` and `PATCH /pools/{id}` (on a change, a field left out
            keeps its value). Example: {'failover_after_seconds': 300, 'line_ids': ['line_01...',
            'line_02...'], 'name': 'Support numbers'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Pool]
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
    body: PoolFields,
) -> Error | Pool | None:
    """Create a sender pool.

     A send that names `pool_id` goes out on the contact's line in the pool (its latest
    conversation's), or for a new contact on the pool's line with the most of today's budget
    left. A message waiting on a pool line that has been paused, flagged or offline for
    `failover_after_seconds` moves to another active line of the pool, if no line has been handed it.

    Args:
        body (PoolFields): `POST /pools` and `PATCH /pools/{id}` (on a change, a field left out
            keeps its value). Example: {'failover_after_seconds': 300, 'line_ids': ['line_01...',
            'line_02...'], 'name': 'Support numbers'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Pool
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: PoolFields,
) -> Response[Error | Pool]:
    """Create a sender pool.

     A send that names `pool_id` goes out on the contact's line in the pool (its latest
    conversation's), or for a new contact on the pool's line with the most of today's budget
    left. A message waiting on a pool line that has been paused, flagged or offline for
    `failover_after_seconds` moves to another active line of the pool, if no line has been handed it.

    Args:
        body (PoolFields): `POST /pools` and `PATCH /pools/{id}` (on a change, a field left out
            keeps its value). Example: {'failover_after_seconds': 300, 'line_ids': ['line_01...',
            'line_02...'], 'name': 'Support numbers'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Pool]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: PoolFields,
) -> Error | Pool | None:
    """Create a sender pool.

     A send that names `pool_id` goes out on the contact's line in the pool (its latest
    conversation's), or for a new contact on the pool's line with the most of today's budget
    left. A message waiting on a pool line that has been paused, flagged or offline for
    `failover_after_seconds` moves to another active line of the pool, if no line has been handed it.

    Args:
        body (PoolFields): `POST /pools` and `PATCH /pools/{id}` (on a change, a field left out
            keeps its value). Example: {'failover_after_seconds': 300, 'line_ids': ['line_01...',
            'line_02...'], 'name': 'Support numbers'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Pool
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
